"""flake.nix: the current kernel-builder input and its current flake function."""

from __future__ import annotations

import re

from scaffold.checks.base import Context, Finding, error, warning
from scaffold.project.editions import LANGUAGE_EDITION
from scaffold.project.flakepin import EDITION, pinned_input
from scaffold.support.safefs import read_regular_text
from scaffold.vocabulary import NIX_BUILT_BACKENDS

FLAKE = "flake.nix"
#: The flake input release builds use, and the function that turns a kernel into flake outputs.
CURRENT_INPUT = "github:huggingface/kernels"
CURRENT_FUNCTION = "genKernelFlakeOutputs"
#: The retired ones, from when kernel-builder lived in its own repository.
RETIRED_REPOSITORY = "huggingface/kernel-builder"
RETIRED_FUNCTION = "genFlakeOutputs"

SUPPORTED_FORMAT = (
    'inputs.kernel-builder.url = "github:huggingface/kernels"; outputs = { self, kernel-builder }: '
    "kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; };"
)

_URL = re.compile(r'\burl\s*=\s*"([^"]*)"')
_CURRENT_URL = re.compile(
    r"^(?:github:huggingface/kernels(?:[/?].*)?|(?:git\+)?https://github\.com/huggingface/kernels"
    r"(?:\.git)?(?:[/?].*)?)$"
)
_HTTPS_INPUT = "https://github.com/huggingface/kernels"
_CALL = re.compile(rf"\b{CURRENT_FUNCTION}\s*\{{")


def _strip_comments(text: str) -> str:
    """Nix source without ``# ...`` and ``/* ... */`` comments (strings kept)."""
    out: list[str] = []
    index = 0
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif char == "#":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _call_body(text: str, start: int) -> str:
    """The ``{ ... }`` attribute set passed to the call whose ``{`` is at ``start``."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return text[start:]


def check_flake(context: Context) -> list[Finding]:
    """flake.nix uses github:huggingface/kernels and genKernelFlakeOutputs with `inherit self`.

    A project none of whose backends kernel-builder's Nix builds (neuron only) needs none.
    """
    path = context.project / FLAKE
    if not path.is_file():
        if context.backends and not set(context.backends) & set(NIX_BUILT_BACKENDS):
            return []  # e.g. neuron only: kernel-builder's Nix has no build set to run
        return [
            error(
                FLAKE,
                "There is no flake.nix: release builds run `nix build` on it.",
                f"Create flake.nix: {SUPPORTED_FORMAT}",
            )
        ]
    text = _strip_comments(read_regular_text(path) or "")
    findings: list[Finding] = []
    urls = _URL.findall(text)
    retired = [url for url in urls if RETIRED_REPOSITORY in url]
    for url in retired:
        findings.append(
            error(
                FLAKE,
                f'Input url "{url}" is the retired kernel-builder repository; kernel-builder now '
                "lives in huggingface/kernels.",
                f'Set the input to url = "{pinned_input()}", then run `nix flake update`.',
            )
        )
    if not any(_CURRENT_URL.match(url) for url in urls) and not retired:
        local = [url for url in urls if url.startswith(("path:", "/", "./", "../"))]
        if local:
            findings.append(
                warning(
                    FLAKE,
                    f'kernel-builder comes from a local checkout ("{local[0]}"); releases '
                    "should build with the published one.",
                    "Pin a kernel-builder revision that builds edition 6 before releasing "
                    "(`kscaffold update --edition 6 --kernel-builder REF`)."
                    if context.general.get("edition") == LANGUAGE_EDITION
                    else f'Set the input to url = "{pinned_input()}" before releasing.',
                )
            )
        else:
            findings.append(
                error(
                    FLAKE,
                    f"No flake input points to kernel-builder ({CURRENT_INPUT}).",
                    f'Add inputs.kernel-builder.url = "{pinned_input()}";',
                )
            )
    unpinned = [url for url in urls if url.rstrip("/") in (CURRENT_INPUT, _HTTPS_INPUT)]
    edition = context.general.get("edition")
    for url in unpinned:
        findings.append(
            warning(
                FLAKE,
                f'Input url "{url}" follows kernel-builder\'s main branch, whose builder reads '
                f"only the newest build.toml edition: the build breaks when it moves past "
                f"edition {edition if edition == LANGUAGE_EDITION else EDITION}.",
                (
                    "Pin a revision that builds edition 6, e.g. the one you build with today: "
                    "`kscaffold update --edition 6 --kernel-builder REF`."
                    if edition == LANGUAGE_EDITION
                    else f"Pin the release that builds edition {EDITION}: "
                    f'url = "{pinned_input()}"; (`kscaffold update` does it).'
                ),
            )
        )
    call = _CALL.search(text)
    if call is None:
        retired_call = re.search(rf"\b{RETIRED_FUNCTION}\b", text) is not None
        findings.append(
            error(
                FLAKE,
                f"outputs uses the retired {RETIRED_FUNCTION}."
                if retired_call
                else f"outputs does not call kernel-builder.lib.{CURRENT_FUNCTION}.",
                f"Write outputs as: {SUPPORTED_FORMAT}",
            )
        )
        return findings
    body = _call_body(text, call.end() - 1)
    if not re.search(r"\binherit\s[^;]*\bself\b|\bself\s*=", body):
        findings.append(
            error(
                FLAKE,
                f"{CURRENT_FUNCTION} is not given the flake's self, so kernel-builder stops "
                "(it needs it for the build's unique id and provenance).",
                f"Add `inherit self;` to the {CURRENT_FUNCTION} {{ ... }} arguments.",
            )
        )
    if re.search(r"\brev\s*=", body):
        findings.append(
            error(
                FLAKE,
                f"The rev argument of {CURRENT_FUNCTION} is retired; kernel-builder stops on it.",
                "Remove `rev = ...;` and pass `inherit self;` instead.",
            )
        )
    return findings
