"""Filter sets: "may group g hold key k?" and "which groups may hold k?" for many groups in
one file (format version 7 with the groups' names, 6 without): :func:`build_set`,
:func:`load_set`, :class:`FilterSet`."""

from __future__ import annotations

import os
from typing import Any, Optional

from . import _ribbon


class FilterSet:
    """One file answering (group, key) for thousands or millions of groups: a filter over
    the pairs' hashes, so each group's keys are found and any other pair (another group's
    key, a group never given) is taken for a member with probability about 2^-bits.

    Made by :func:`build_set` or :func:`load_set`; immutable. Groups are named by integers or
    byte strings (str as UTF-8), keys likewise. ``len()`` is the number of groups; ``fs[g]``
    answers for one group; pickles as its file bytes."""

    __slots__ = ("_filter",)

    def __init__(self, filter: "_ribbon.Filter"):
        """Wraps a :class:`ribbon.Filter` that is a filter set (QueryError otherwise)."""
        if not filter.is_set:
            raise _ribbon.QueryError(
                "not a filter set (built by ribbon.build_set or `ribbon build --groups -o`): "
                "open it with ribbon.load")
        self._filter = filter

    def contains(self, groups, keys):
        """May group ``groups[i]`` hold ``keys[i]``? A numpy bool array. ``groups``: one group
        (int, str or bytes) for every key, or a collection with one per key (numpy, pyarrow or
        any iterable, as ``keys``)."""
        return self._filter.contains_in(groups, keys)

    def groups(self):
        """The names of every group the set was built with (those without keys too), sorted:
        a numpy uint64 array (integer groups) or a list of bytes. QueryError for a set built
        with ``group_names=False`` (format version 6)."""
        return self._filter.groups()

    def groups_of(self, keys):
        """Which groups may hold each key: ``(offsets, indices)``, numpy uint64 arrays; key i's
        groups are ``groups()[indices[offsets[i]:offsets[i + 1]]]``, ascending. Every group
        holding the key is there, any other with probability about 2^-bits. One probe per
        (group, key), group hashes computed once, batched; keys as for :meth:`contains`."""
        return self._filter.groups_of(keys)

    def groups_of_key(self, key) -> list:
        """The names of the groups that may hold one key (a list)."""
        _, indices = self._filter.groups_of([key])
        names = self._filter.groups()
        return [names[int(i)] for i in indices]

    @property
    def has_group_names(self) -> bool:
        """Whether the set knows its groups' names (format version 7)."""
        return self._filter.has_group_names

    @property
    def metadata(self) -> Optional[bytes]:
        """The application metadata stored with the set, or None."""
        return self._filter.metadata

    def __getitem__(self, group) -> "GroupView":
        """The set as one group sees it: ``fs[g].contains(keys)``, ``key in fs[g]``."""
        return GroupView(self, group)

    def __len__(self) -> int:
        """The number of groups that hold keys."""
        return self._filter.group_count

    @property
    def group_count(self) -> int:
        """Distinct groups that hold keys (``len(groups())`` counts those without keys too)."""
        return self._filter.group_count

    @property
    def key_count(self) -> int:
        """Distinct (group, key) pairs."""
        return len(self._filter)

    @property
    def group_kind(self) -> str:
        """"u64" (groups named by integers) or "bytes"."""
        return self._filter.group_kind

    @property
    def key_kind(self) -> str:
        """"u64" (integer keys) or "bytes"."""
        return self._filter.key_kind

    @property
    def fpr(self) -> float:
        """The expected rate at which a pair not in the set is taken for one (about 2^-bits)."""
        return self._filter.fpr

    @property
    def bits_per_key(self) -> float:
        """File bits per distinct pair."""
        return self._filter.bits_per_key

    @property
    def nbytes(self) -> int:
        """Size of the file in bytes."""
        return self._filter.nbytes

    @property
    def filter(self) -> "_ribbon.Filter":
        """The underlying :class:`ribbon.Filter` (its ``contains_in`` is this set's)."""
        return self._filter

    def info(self) -> dict:
        """The fields of ``ribbon info --json``."""
        return self._filter.info()

    def save(self, path: os.PathLike | str) -> None:
        """Writes the file atomically (format version 7 with group names, 6 without)."""
        self._filter.save(path)

    def to_bytes(self) -> bytes:
        """The file bytes (as save() writes them)."""
        return self._filter.to_bytes()

    def __bytes__(self) -> bytes:
        return self._filter.to_bytes()

    @classmethod
    def from_bytes(cls, buffer, *, verify: bool = True) -> "FilterSet":
        """A filter set from a file image (bytes or any buffer), validated like a file."""
        return cls(_ribbon.Filter.from_bytes(buffer, verify=verify))

    def __reduce__(self):
        return (FilterSet.from_bytes, (self._filter.to_bytes(),))

    def __repr__(self) -> str:
        return "<ribbon.FilterSet %d groups (%s), %d pairs, %s keys, %.3f bits/key>" % (
            self.group_count, self.group_kind, self.key_count, self.key_kind, self.bits_per_key)


class GroupView:
    """One group of a :class:`FilterSet`: ``contains(keys)`` and ``key in view``."""

    __slots__ = ("_set", "_group")

    def __init__(self, filter_set: FilterSet, group):
        """The group `group` of `filter_set`."""
        self._set = filter_set
        self._group = group

    def contains(self, keys):
        """May this group hold each key? A numpy bool array."""
        return self._set.filter.contains_in(self._group, keys)

    def __contains__(self, key) -> bool:
        """May this group hold the key?"""
        return bool(self._set.filter.contains_in(self._group, [key])[0])

    def __repr__(self) -> str:
        return "<ribbon.FilterSet group %r>" % (self._group,)


def build_set(groups, keys, **options: Any) -> FilterSet:
    """Builds a filter set of the pairs ``(groups[i], keys[i])``.

    groups, keys: numpy arrays, pyarrow arrays or iterables of int, bytes or str, of equal
    length (a repeated pair counts once). options: as :func:`ribbon.build` for filters (fpr,
    bits, width, variant, seed, threads, shard_size, slack, success_probability,
    threshold_codes, key_kind) and group_kind ("u64" or "bytes", for empty inputs);
    group_names (default True: the file names every group, so :meth:`FilterSet.groups_of`
    answers; False writes format version 6, for readers of the release before); all_groups
    (a collection of further group names, groups that hold no key, e.g. an empty data file);
    metadata (bytes stored with the file as they are). The same pairs and options give the
    file of ``ribbon build --groups -o`` (groups of text lines are byte strings; of
    ``--format u64`` integers)."""
    return FilterSet(_ribbon._build_set(groups, keys, **options))


def load_set(path: os.PathLike | str, *, verify: bool = True, mmap: bool = True) -> FilterSet:
    """Opens a filter set file (format version 6 or 7); see :func:`ribbon.load`."""
    return FilterSet(_ribbon.load(path, verify=verify, mmap=mmap))
