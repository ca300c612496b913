"""(being written)"""


def cases(ctx):
    return []
