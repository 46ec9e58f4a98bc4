"""Tensors with named axes at run time: alignment by name, and axis patterns.

A value of the evaluator is a plain torch tensor whose dimensions are, in order, the
axes of the checker's type for the expression that made it. These functions move data
between such orders by name, as LANGUAGE.md §3.2 and §5.1 say, one step at a time.
"""
from __future__ import annotations

from ..syntax import ast as A


def occurrences(names) -> list:
    """(name, k): each axis name with the count of the same name before it, so that a
    repeated name (`[b n n]`) pairs its first with the other's first, and so on."""
    seen: dict = {}
    out = []
    for n in names:
        out.append((n, seen.get(n, 0)))
        seen[n] = seen.get(n, 0) + 1
    return out


def align(value, from_names, to_names):
    """A tensor whose axes are `from_names`, made to broadcast against `to_names`: its
    axes reordered to stand where `to_names` has them, with size-1 axes elsewhere.
    Plain numbers pass unchanged."""
    import torch  # torch is not a dependency of the core: imported only when evaluating
    if not isinstance(value, torch.Tensor):
        return value
    if value.dim() == 0:
        return value
    target = occurrences(to_names)
    where = [target.index(key) for key in occurrences(from_names)]
    order = sorted(range(len(where)), key=lambda j: where[j])
    moved = value.permute(*order)
    shape = [1] * len(target)
    for j in order:
        shape[where[j]] = value.shape[j]
    return moved.reshape(shape)


def positions(names, over) -> list:
    """The positions of every axis named in `over`."""
    return [i for i, n in enumerate(names) if n in over]


class PatternRun:
    """One pattern call at run time: leaf sizes from the operand's actual shape, the
    known sizes of dims and size variables (`size_of`), and division for the one
    unknown name of a group."""

    def __init__(self, size_of):
        self.size_of = size_of  # pattern name -> int or None
        self.sizes: dict = {}  # pattern name -> int, as this call binds them

    def leaves(self, side: A.PSide, shape) -> list:
        """[(name or int, size)] of a side matched against a shape, groups opened."""
        out = []
        for item, n in zip(side.items, shape):
            if isinstance(item, A.PName):
                self.sizes[item.name] = n
                out.append((item.name, n))
            elif isinstance(item, A.PInt):
                out.append((item.value, n))
            else:
                known, unknown = 1, None
                for it in item.items:
                    s = it.value if isinstance(it, A.PInt) else self.sizes.get(it.name, self.size_of(it.name))
                    if s is None:
                        unknown = it.name
                    else:
                        known *= s
                for it in item.items:
                    if isinstance(it, A.PInt):
                        out.append((it.value, it.value))
                        continue
                    if it.name == unknown:
                        self.sizes[it.name] = n // known
                    elif it.name not in self.sizes:
                        self.sizes[it.name] = self.size_of(it.name)
                    out.append((it.name, self.sizes[it.name]))
        return out

    def out_size(self, name) -> int:
        if isinstance(name, int):
            return name
        s = self.sizes.get(name)
        return s if s is not None else self.size_of(name)

    def rearrange(self, x, pattern, drop_first_int=False):
        """rearrange and repeat (and split, whose count `drop_first_int` moves first):
        split x into its leaves, put the right side's leaves in order (new names of
        `repeat` broadcast), then group them as the right side writes."""
        left = self.leaves(pattern.inputs[0], x.shape)
        x = x.reshape([s for _, s in left])
        names = [n for n, _ in left]
        split_at = None
        if drop_first_int:
            split_at = next(i for i, it in enumerate(pattern.inputs[0].items)
                            if isinstance(it, A.PGroup) and isinstance(it.items[0], A.PInt))
            split_at = sum(len(it.items) if isinstance(it, A.PGroup) else 1
                           for it in pattern.inputs[0].items[:split_at])
        right = []
        for item in pattern.output.items:
            group = item.items if isinstance(item, A.PGroup) else [item]
            right.append([it.name if isinstance(it, A.PName) else it.value for it in group])
        flat = [n for g in right for n in g]
        order, used = [], set()
        if split_at is not None:
            order.append(split_at)
            used.add(split_at)
        new = []  # (position in the result's leaves, size) of leaves the left side lacks
        for k, n in enumerate(flat):
            j = next((i for i, m in enumerate(names) if m == n and i not in used and not isinstance(n, int)), None)
            if j is None:
                new.append((k, self.out_size(n)))
            else:
                order.append(j)
                used.add(j)
        for i, (n, s) in enumerate(left):  # left leaves the right omits are 1 (or the split count)
            if i not in used:
                assert s == 1, f"the leaf {n} of size {s} is not on the right side"
        x = x.permute(*order + [i for i in range(len(left)) if i not in used]) if order else x
        x = x.reshape(list(x.shape[:len(order)]))
        head = 1 if split_at is not None else 0
        for k, s in new:
            x = x.unsqueeze(head + k)
            shape = list(x.shape)
            shape[head + k] = s
            x = x.expand(shape)
        sizes = []
        for g in right:
            p = 1
            for n in g:
                p *= self.out_size(n) if not isinstance(n, int) else n
            sizes.append(p)
        if split_at is not None:
            return tuple(x.reshape([x.shape[0]] + sizes).unbind(0))
        return x.reshape(sizes)

    def einsum(self, tensors, pattern):
        import torch  # torch is not a dependency of the core: imported only when evaluating
        letters: dict = {}

        def letter(name):
            if name not in letters:
                letters[name] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(letters)]
            return letters[name]
        for side, t in zip(pattern.inputs, tensors):
            self.leaves(side, t.shape)
        spec = ",".join("".join(letter(i.name) for i in side.items) for side in pattern.inputs)
        spec += "->" + "".join(letter(i.name) for i in pattern.output.items)
        return torch.einsum(spec, *tensors)
