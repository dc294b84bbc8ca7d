"""The graph IR: Graph and Node, code generation, the one Interpreter, expression printing."""
