"""The shared acceptance cases, restated: one test per case, contract checked point by point."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _contract import verify
from tensorplay_export import Dim, nn

R = np.random.default_rng(42)


def rnd(*shape):
    return R.standard_normal(shape).astype(np.float32)


TABLE = rnd(512, 16)
SMALL = np.array([1.0, 2.0, 3.0], dtype=np.float32)
WQKV, WO = rnd(32, 96) * 0.1, rnd(32, 32) * 0.1
W16 = rnd(16, 8)
W48 = rnd(48, 5)
TABLE8 = rnd(512, 8)


def test_attention_block_ok():
    def model(x):
        b, s, d = x.shape
        q, k, v = np.split(x @ WQKV, 3, axis=-1)
        q, k, v = (t.reshape(b, s, 4, d // 4).transpose(0, 2, 1, 3) for t in (q, k, v))
        sc = q @ k.swapaxes(-1, -2) / np.sqrt(d // 4)
        sc = np.where(np.tril(np.ones((s, s), dtype=bool)), sc, -np.inf)
        w = np.exp(sc - sc.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        return (w @ v).transpose(0, 2, 1, 3).reshape(b, s, d) @ WO
    verify(model, lambda batch, seq: ((rnd(batch, seq, 32),), {}),
           {"x": {0: Dim("batch", max=16), 1: Dim("seq", max=256)}}, dict(batch=2, seq=7),
           lambda batch, seq: 1 <= batch <= 16 and 1 <= seq <= 256, dict(batch=[1, 16, 17], seq=[1, 2, 256, 257]))


def test_auto_divisible_enforced():
    verify(lambda x: x.reshape(100, -1) + 1.0, lambda n: ((rnd(n),), {}), {"x": {0: Dim.AUTO}}, dict(n=200),
           lambda n: n % 100 == 0, dict(n=[99, 100, 200, 2099, 2100]))


def test_auto_relation_kept():
    def model(x):
        assert x.shape[0] == 2 * x.shape[1]
        return x * 2.0
    verify(model, lambda rows, cols: ((rnd(rows, cols),), {}), {"x": {0: Dim.AUTO, 1: Dim.AUTO}},
           dict(rows=8, cols=4), lambda rows, cols: rows == 2 * cols, dict(rows=[2, 5, 6, 8], cols=[1, 3, 4]))


def test_branch_on_size_violation():
    def model(x):
        return x + 1.0 if x.shape[0] > 4 else x - 1.0
    verify(model, lambda batch: ((rnd(batch, 3),), {}), {"x": {0: Dim("batch", max=64)}}, dict(batch=8),
           lambda batch: 5 <= batch <= 64, dict(batch=[1, 4, 5, 64, 65]), "violation")


def test_concat_auto():
    verify(lambda x, y, z: np.concatenate([x, y]) + z, lambda dx, dy, dz: ((rnd(dx, 2), rnd(dy, 2), rnd(dz, 2)), {}),
           {"x": {0: Dim("dx", max=20)}, "y": {0: Dim("dy", max=20)}, "z": {0: Dim.AUTO}}, dict(dx=3, dy=4, dz=7),
           lambda dx, dy, dz: dz == dx + dy and dx <= 20 and dy <= 20, dict(dx=[1, 3, 21], dy=[1, 4], dz=[2, 7, 6]))


def test_conjoined_bounds_violation():
    def model(x):
        s = x.shape[1]
        h = x + TABLE8[:s]
        return h * 2.0 if s == 512 else h
    verify(model, lambda seq: ((rnd(1, seq, 8),), {}), {"x": {1: Dim("seq")}}, dict(seq=7),
           lambda seq: 1 <= seq <= 511, dict(seq=[1, 511, 512, 513]), "violation")


def test_constant_slice_min():
    verify(lambda x: (SMALL[: x.shape[0]] * 2.0, x.sum()), lambda n: ((rnd(n),), {}), {"x": {0: Dim("n", max=100)}},
           dict(n=2), lambda n: 1 <= n <= 100, dict(n=[1, 3, 4, 100, 101]))


def test_double_relation_violation():
    verify(lambda x, y: np.concatenate([x, x]) * y, lambda dx, dy: ((rnd(dx, 2), rnd(dy, 2)), {}),
           {"x": {0: Dim("dx", max=100)}, "y": {0: Dim("dy", max=100)}}, dict(dx=4, dy=8),
           lambda dx, dy: dy == 2 * dx and dx <= 50, dict(dx=[1, 4, 50, 51], dy=[2, 8, 100, 7]), "violation")


def test_equal_dims_violation():
    verify(lambda x, y: x + y, lambda dx, dy: ((rnd(dx, 3), rnd(dy, 3)), {}),
           {"x": {0: Dim("dx", max=100)}, "y": {0: Dim("dy", max=100)}}, dict(dx=8, dy=8),
           lambda dx, dy: dx == dy and dx <= 100, dict(dx=[1, 7, 100, 101], dy=[1, 7, 101]), "violation")


def test_even_pooling_violation():
    def model(x):
        b, s, d = x.shape
        return x.reshape(b, s // 2, 2, d).mean(axis=2)
    verify(model, lambda batch, seq: ((rnd(batch, seq, 3),), {}),
           {"x": {0: Dim("batch", max=16), 1: Dim("seq", max=64)}}, dict(batch=2, seq=10),
           lambda batch, seq: batch <= 16 and seq % 2 == 0 and seq <= 64, dict(batch=[1, 16], seq=[1, 2, 3, 64, 66]),
           "violation")


def test_kwargs_nested():
    def model(x, *, extras):
        return x * extras["scale"] + extras["bias"]
    b = Dim("batch", max=32)
    verify(model, lambda batch: ((rnd(batch, 3),), {"extras": {"scale": rnd(batch, 3), "bias": rnd(3)}}),
           {"x": {0: b}, "extras": {"scale": {0: b}, "bias": None}}, dict(batch=4), lambda batch: batch <= 32,
           dict(batch=[1, 32, 33]))


def test_matmul_inner_violation():
    verify(lambda x: x @ W16, lambda batch, k: ((rnd(batch, k),), {}),
           {"x": {0: Dim("batch", max=32), 1: Dim("k", max=64)}}, dict(batch=3, k=16),
           lambda batch, k: k == 16 and batch <= 32, dict(batch=[1, 33], k=[1, 16, 17]), "violation")


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(rnd(6, 6))
        self.register_buffer("shift", rnd(6))
        self.register_buffer("table", rnd(10, 6), persistent=False)

    def forward(self, x, ids):
        return x @ self.weight + self.shift + self.table[ids]


def test_module_state_lifted():
    m = Scale()
    ep = verify(m, lambda batch: ((rnd(batch, 6), np.arange(batch) % 10), {}),
                {"x": {0: Dim("batch", max=128)}, "ids": {0: Dim("batch", max=128)}}, dict(batch=3),
                lambda batch: batch <= 128, dict(batch=[1, 128, 129]))
    assert set(m.state_dict()) <= set(ep.state_dict)


def test_nonzero_branch_is_data_dependent():
    def model(x):
        nz = np.nonzero(x > 0)[0]
        if nz.shape[0] > 3:
            return x * 2.0
        return x
    with pytest.raises(tpe.DataDependentError, match=r"data-dependent(.|\n)*test_acceptance_cases.py:\d+  `if nz"):
        tpe.export(model, rnd(10), dynamic_shapes={"x": {0: Dim("n", max=100)}})


def test_offset_relation_violation():
    verify(lambda x, y: x[1:] + y, lambda dx, dy: ((rnd(dx, 5), rnd(dy, 5)), {}),
           {"x": {0: Dim("dx", max=100)}, "y": {0: Dim("dy", max=100)}}, dict(dx=9, dy=8),
           lambda dx, dy: dx == dy + 1 and dy <= 99, dict(dx=[2, 9, 100, 101], dy=[1, 8, 99, 100]), "violation")


def test_position_table_slice_violation():
    verify(lambda x: x + TABLE[: x.shape[1]], lambda batch, seq: ((rnd(batch, seq, 16),), {}),
           {"x": {0: Dim("batch", max=64), 1: Dim("seq", max=1024)}}, dict(batch=2, seq=16),
           lambda batch, seq: batch <= 64 and seq <= 512, dict(batch=[1, 65], seq=[1, 512, 513]), "violation")


def test_position_table_take_violation():
    verify(lambda x: x + np.take(TABLE, np.arange(x.shape[1]), axis=0), lambda batch, seq: ((rnd(batch, seq, 16),), {}),
           {"x": {0: Dim("batch", max=64), 1: Dim("seq", max=1024)}}, dict(batch=2, seq=16),
           lambda batch, seq: batch <= 64 and seq <= 512, dict(batch=[1, 64], seq=[1, 512, 513]), "violation")


def test_reshape_divisible_violation():
    verify(lambda x: x.reshape(-1, 4).sum(axis=1), lambda n: ((rnd(n),), {}), {"x": {0: Dim("n", max=1000)}},
           dict(n=8), lambda n: n % 4 == 0 and n <= 1000, dict(n=[1, 3, 4, 6, 8, 1000, 1004]), "violation")


def test_shared_dim_ok():
    b = Dim("b", min=2, max=50)
    verify(lambda x, y: (x * y).sum(axis=1), lambda b, b2: ((rnd(b, 4), rnd(b2, 4)), {}), {"x": {0: b}, "y": {0: b}},
           dict(b=5, b2=5), lambda b, b2: b == b2 and 2 <= b <= 50, dict(b=[1, 2, 50, 51], b2=[2, 50]))


def test_size_one_example_not_pinned():
    verify(lambda x: x.reshape(x.shape[0], -1) @ W48, lambda batch: ((rnd(batch, 3, 4, 4),), {}),
           {"x": {0: Dim("batch", min=1, max=10)}}, dict(batch=1), lambda batch: batch <= 10,
           dict(batch=[1, 2, 10, 11]))


def test_specialize_constant_violation():
    verify(lambda x: x.reshape(4, 6).T, lambda batch: ((rnd(batch, 6),), {}), {"x": {0: Dim("batch", max=64)}},
           dict(batch=4), lambda batch: batch == 4, dict(batch=[1, 3, 4, 5]), "violation")


def test_tautology_min_is_no_constraint():
    def model(x):
        s = x.shape[1]
        if min(128 * s, 512 * s) == 128 * s:
            return x.sum(axis=1)
        return -x.sum(axis=1)
    verify(model, lambda seq: ((rnd(2, seq),), {}), {"x": {1: Dim("seq", max=2048)}}, dict(seq=100),
           lambda seq: seq <= 2048, dict(seq=[1, 2, 2048, 2049]))
