"""Programs: ExportedProgram, its signature, program building, input checks, unflatten, decompositions."""
