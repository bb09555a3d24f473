"""Differential fuzzer: random autograd programs run by PyTorch and by adcli, compared
record by record. See README.md in this folder."""
