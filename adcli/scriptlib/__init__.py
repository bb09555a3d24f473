"""What a script can import: the `torch` namespace, `torch.nn`, `numpy`, `math`, ...

Built from the autograd engine, `adcli.nn` and the language layer's guard;
`torchapi` holds the `torch` module table, `pymodules` the Python and NumPy
modules, `compat` the pre-2019 API.
"""
