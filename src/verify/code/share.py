"""The lists, dicts, sets and bytearrays the checker and the program both
hold, for harness.

In one process, a test and the program share objects: a list the test
passes is the one the function appends to, and a list a function returns
from a global is the global. Across the two processes each side holds a
copy, so each copy is linked to the other under one id, and the two agree
again at every request: the checker sends what the test changed (`sync`),
the program answers with what the request changed (`synced`). A link lasts
while both sides hold the object; a side that alone still holds it drops
the link (`drop`, `dropped`), so a loop of calls on fresh lists keeps
nothing linked.

Only the outer object is linked: a test holding a list nested inside a
returned one holds a copy of it (the outer one, changed, carries the
change).
"""
import sys

import wire

# The containers that are linked: what a call or a test changes in place.
MUTABLE = (list, dict, set, bytearray)


def assign(target, value):
    """Makes `target` hold what `value` holds, in place."""
    if not isinstance(target, type(value)) and not isinstance(value, type(target)):
        raise TypeError("a %s cannot become a %s" % (type(target).__name__, type(value).__name__))
    if isinstance(target, (list, bytearray)):
        target[:] = value
    else:
        target.clear()
        target.update(value)


def _count(entry):
    return sys.getrefcount(entry[0])


# What holding an object in a link's entry alone counts.
_ALONE = _count([[], None])


class Links:
    """Linked objects by id, each with the value both sides last agreed on."""

    def __init__(self, prefix):
        self.prefix, self.made = prefix, 0
        self.entries, self.ids = {}, {}

    def __contains__(self, n):
        return n in self.entries

    def of(self, value):
        """The id `value` is linked under, if it is."""
        n = self.ids.get(id(value))
        return n if n is not None and self.entries[n][0] is value else None

    def new(self, value, agreed):
        """Links `value` under an id of this side's making."""
        self.made += 1
        n = "%s%d" % (self.prefix, self.made)
        self.link(n, value, agreed)
        return n

    def link(self, n, value, agreed):
        if type(n) is not str:
            raise TypeError("a malformed link")
        self.entries[n] = [value, agreed]
        self.ids[id(value)] = n

    def get(self, n):
        entry = self.entries.get(n) if type(n) is str else None
        if entry is None:
            raise TypeError("no such link: %r" % (n,))
        return entry[0]

    def unlink(self, n):
        entry = self.entries.pop(n, None) if type(n) is str else None
        if entry is not None and self.ids.get(id(entry[0])) == n:
            del self.ids[id(entry[0])]

    def agree(self, n, value, agreed):
        """Takes the other side's `value` (decoded) of link `n`, which both
        then agree is `agreed` (encoded)."""
        entry = self.entries.get(n) if type(n) is str else None
        if entry is None:
            return
        assign(entry[0], value)
        entry[1] = agreed

    def changes(self, encode):
        """[id, value] of each object changed since both sides agreed on it,
        which they now agree on."""
        changed = []
        for n, entry in self.entries.items():
            now = encode(entry[0])
            if now != entry[1]:
                entry[1] = now
                changed.append([n, now])
        return changed

    def lonely(self):
        """Unlinks the objects nothing but their link holds, and says which."""
        alone = [n for n, entry in self.entries.items() if _count(entry) <= _ALONE]
        for n in alone:
            self.unlink(n)
        return alone


def changed_in_place(changed, args, kwargs, decode):
    """Hands a call's changes to its list, dict, set and bytearray arguments
    back to the test's own objects."""
    if type(changed) is not list:
        raise wire.WireError("a malformed change")
    for entry in changed:
        if type(entry) is not list or len(entry) != 2:
            raise wire.WireError("a malformed change")
        key, value = entry
        if type(key) is int and 0 <= key < len(args):
            target = args[key]
        elif type(key) is str and key in kwargs:
            target = kwargs[key]
        else:
            raise wire.WireError("a malformed change")
        value = decode(value)
        if not isinstance(target, type(value)):
            raise wire.WireError("a change of type")
        assign(target, value)
