"""Example models shipped with the package (the default model when `hooktui` gets no argument)."""
