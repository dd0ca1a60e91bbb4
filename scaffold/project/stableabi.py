"""The torch version a project built against torch's stable ABI targets (``new --stable-abi``).

The template's ops written for the stable ABI use ``torch::stable::parallel_for``, the
``new_empty``/``contiguous``/``copy_`` wrappers and ``TORCH_BOX``-ed registrations, which torch
2.10 is the first to provide: a build targeting 2.10 loads on 2.10 and every later torch.
"""

from __future__ import annotations

import re

from scaffold.errors import InvalidOptionError

#: The oldest torch whose stable ABI has everything the template's ops use.
MIN_STABLE_ABI = (2, 10)
DEFAULT_STABLE_ABI = f"{MIN_STABLE_ABI[0]}.{MIN_STABLE_ABI[1]}"


def parse_stable_abi(text: str) -> str:
    """``2.10`` (also ``2.10.0``) as ``major.minor``; refused below :data:`MIN_STABLE_ABI`."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    if match is None:
        raise InvalidOptionError(
            f"Invalid stable-ABI torch version '{text}': give a torch release such as "
            f"{DEFAULT_STABLE_ABI}."
        )
    version = (int(match[1]), int(match[2]))
    if version < MIN_STABLE_ABI:
        raise InvalidOptionError(
            f"The template's ops need torch {DEFAULT_STABLE_ABI} or newer under the stable ABI "
            f"(torch::stable::parallel_for and the tensor-creating wrappers first appear there), "
            f"not {text}: use --stable-abi {DEFAULT_STABLE_ABI} or later."
        )
    return f"{version[0]}.{version[1]}"
