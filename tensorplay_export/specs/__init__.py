"""Dynamic-shape specs: the Dim vocabulary, spec normalization, input binding and refine."""
