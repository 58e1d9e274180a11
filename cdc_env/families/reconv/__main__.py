"""``python -m cdc_env.families.reconv``: rewrite the committed reconvergence variants' folders."""

from . import write_all

if __name__ == "__main__":
    for path in write_all():
        print(path)
