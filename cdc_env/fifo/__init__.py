"""The asynchronous FIFO task family: generator, training variants, held-out minting, CLI.

generator.py writes one complete task folder from a ``FifoParams``; variants.py holds the 13
committed training variants and the extra defect-shape variants; heldout.py mints the held-out
variants from an operator's key; cli.py adds ``cdc-env fifo ...`` and ``cdc-env heldout ...``.
"""
