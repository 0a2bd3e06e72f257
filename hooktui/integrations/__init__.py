"""hooktui inside the trainers people use: a callback for PyTorch Lightning (lightning.py,
pytorch_lightning.py) and one for the Hugging Face Trainer (transformers.py). Each imports
its library when imported itself; hooktui needs none of them (README: "Lightning and the
Hugging Face Trainer")."""
