"""adcli: run .ad scripts and see, node by node, how autograd computes gradients."""

__version__ = "0.1.0"
