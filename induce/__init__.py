"""induce: unsupervised NLP with collapsed variational inference."""

__version__ = "0.1.0"
