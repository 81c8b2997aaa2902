"""The miniature's generated C++ modules: settings classes of our own, in upstream's folders.

Upstream's libtensorrt_llm.so is built from thousands of translation units; the miniature's has
the capacity scheduler and what it uses (tests/fixtures/miniature/base/cpp), and these: small
settings classes (getters, setters, a map and a line of text), one translation unit each, so
that a one-line change recompiling one file is a small part of a cold build, as upstream's is
(make bench measures it). Written by the miniature's base commit (manifest: `modules: cpp`),
deterministic, our own code; cpp/tensorrt_llm/CMakeLists.txt lists them.
"""
from __future__ import annotations

from pathlib import Path

H = ("// SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n"
     "// SPDX-License-Identifier: Apache-2.0\n")

# (folder, class name, what it holds: (field name, C++ type, default))
MODULES = [
    ("runtime", "BufferManager", "Miniature stand-in for upstream's buffer manager (our own code): named host buffers.",
     [("capacity", "std::size_t", "0"), ("name", "std::string", '"buffer"'), ("pinned", "bool", "false")]),
    ("runtime", "SamplingConfig", "Miniature stand-in for upstream's sampling config (our own code).",
     [("beamWidth", "std::int32_t", "1"), ("temperature", "float", "1.0f"), ("topK", "std::int32_t", "0"), ("topP", "float", "1.0f")]),
    ("runtime", "WorldConfig", "Miniature stand-in for upstream's world config (our own code): ranks and devices.",
     [("tensorParallelism", "std::int32_t", "1"), ("pipelineParallelism", "std::int32_t", "1"), ("rank", "std::int32_t", "0")]),
    ("runtime", "ModelConfig", "Miniature stand-in for upstream's model config (our own code).",
     [("vocabSize", "std::int32_t", "32000"), ("numLayers", "std::int32_t", "32"), ("numHeads", "std::int32_t", "32"), ("hiddenSize", "std::int32_t", "4096")]),
    ("runtime", "GptDecoder", "Miniature stand-in for upstream's decoder settings (our own code).",
     [("maxBatchSize", "std::int32_t", "8"), ("maxSequenceLength", "std::int32_t", "2048"), ("endId", "std::int32_t", "2")]),
    ("runtime", "TllmRuntime", "Miniature stand-in for upstream's runtime handle (our own code).",
     [("engineName", "std::string", '"engine"'), ("numProfiles", "std::int32_t", "1"), ("gatherAllLogits", "bool", "false")]),
    ("executor", "ExecutorConfig", "Miniature stand-in for upstream's executor config (our own code).",
     [("maxBeamWidth", "std::int32_t", "1"), ("maxBatchSize", "std::int32_t", "256"), ("enableChunkedContext", "bool", "false")]),
    ("executor", "KvCacheConfig", "Miniature stand-in for upstream's KV cache config (our own code).",
     [("enableBlockReuse", "bool", "true"), ("maxTokens", "std::int32_t", "0"), ("freeGpuMemoryFraction", "float", "0.9f")]),
    ("executor", "Request", "Miniature stand-in for upstream's executor request (our own code).",
     [("maxTokens", "std::int32_t", "16"), ("streaming", "bool", "false"), ("clientId", "std::string", '""')]),
    ("executor", "Response", "Miniature stand-in for upstream's executor response (our own code).",
     [("requestId", "std::uint64_t", "0"), ("isFinal", "bool", "false"), ("errorMsg", "std::string", '""')]),
    ("executor", "SchedulerConfig", "Miniature stand-in for upstream's scheduler config (our own code).",
     [("capacitySchedulerPolicy", "std::string", '"GUARANTEED_NO_EVICT"'), ("contextChunkingPolicy", "std::string", '"FIRST_COME_FIRST_SERVED"')]),
    ("executor", "ParallelConfig", "Miniature stand-in for upstream's parallel config (our own code).",
     [("communicationType", "std::string", '"MPI"'), ("numNodes", "std::int32_t", "1")]),
    ("batch_manager", "PeftCacheManager", "Miniature stand-in for upstream's LoRA (PEFT) cache manager (our own code).",
     [("numHostPages", "std::int32_t", "0"), ("numDevicePages", "std::int32_t", "0"), ("maxAdapterSize", "std::int32_t", "64")]),
    ("batch_manager", "PauseRequests", "Miniature stand-in for upstream's request pausing (our own code).",
     [("maxPaused", "std::int32_t", "16"), ("evictOldest", "bool", "true")]),
    ("batch_manager", "GuidedDecoder", "Miniature stand-in for upstream's guided decoding settings (our own code).",
     [("backend", "std::string", '"xgrammar"'), ("vocabSizePadded", "std::int32_t", "32000")]),
    ("batch_manager", "CacheTransceiver", "Miniature stand-in for upstream's KV cache transceiver settings (our own code).",
     [("backend", "std::string", '"UCX"'), ("maxTokensInBuffer", "std::int32_t", "4096")]),
    ("common", "EnvUtils", "Miniature stand-in for upstream's environment settings (our own code).",
     [("logLevel", "std::string", '"warning"'), ("forceDeterministic", "bool", "false")]),
    ("common", "TllmException", "Miniature stand-in for upstream's exception details (our own code).",
     [("file", "std::string", '""'), ("line", "std::int32_t", "0"), ("message", "std::string", '""')]),
    ("common", "MemoryUtils", "Miniature stand-in for upstream's memory accounting (our own code).",
     [("allocated", "std::size_t", "0"), ("reserved", "std::size_t", "0")]),
    ("common", "NvtxRange", "Miniature stand-in for upstream's NVTX ranges (our own code): names and depths.",
     [("name", "std::string", '""'), ("depth", "std::int32_t", "0")]),
]


def _lower(name: str) -> str:
    return name[0].lower() + name[1:]


def _header(folder, cls, doc, fields) -> str:
    getters = "\n".join(f"    [[nodiscard]] {t} get{n[0].upper() + n[1:]}() const;\n    void set{n[0].upper() + n[1:]}({t} value);" for n, t, _ in fields)
    members = "\n".join(f"    {t} m{n[0].upper() + n[1:]}{{{d}}};" for n, t, d in fields)
    return f"""{H}// {doc}
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace tensorrt_llm::{folder}
{{

class {cls}
{{
public:
{getters}
    // Its settings by name, as text: what the logs and the Python bindings show.
    [[nodiscard]] std::map<std::string, std::string> toMap() const;
    [[nodiscard]] std::string toString() const;

private:
{members}
}};

}} // namespace tensorrt_llm::{folder}
"""


def _source(folder, cls, doc, fields) -> str:
    methods = "\n".join(f"""{t} {cls}::get{n[0].upper() + n[1:]}() const
{{
    return m{n[0].upper() + n[1:]};
}}

void {cls}::set{n[0].upper() + n[1:]}({t} value)
{{
    m{n[0].upper() + n[1:]} = value;
}}
""" for n, t, _ in fields)
    entries = "\n".join(f'    out["{n}"] = common::toText(m{n[0].upper() + n[1:]});' for n, _, _ in fields)
    return f"""{H}// {doc}
#include "tensorrt_llm/{folder}/{_lower(cls)}.h"

#include "tensorrt_llm/common/stringUtils.h"

namespace tensorrt_llm::{folder}
{{

{methods}
std::map<std::string, std::string> {cls}::toMap() const
{{
    std::map<std::string, std::string> out;
{entries}
    return out;
}}

std::string {cls}::toString() const
{{
    return common::joinItems("{cls}", toMap());
}}

}} // namespace tensorrt_llm::{folder}
"""


STRING_UTILS_H = f"""{H}// Miniature stand-in for upstream's string helpers (our own code): values as text, and a
// settings object said as one line.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <type_traits>

namespace tensorrt_llm::common
{{

template <typename T>
std::string toText(T const& value)
{{
    std::ostringstream os;
    if constexpr (std::is_same_v<T, bool>)
    {{
        os << (value ? "true" : "false");
    }}
    else
    {{
        os << value;
    }}
    return os.str();
}}

// "Name(key=value, ...)", its items in key order.
std::string joinItems(std::string const& name, std::map<std::string, std::string> const& items);

}} // namespace tensorrt_llm::common
"""

STRING_UTILS_CPP = f"""{H}// Miniature stand-in for upstream's string helpers (our own code).
#include "tensorrt_llm/common/stringUtils.h"

namespace tensorrt_llm::common
{{

std::string joinItems(std::string const& name, std::map<std::string, std::string> const& items)
{{
    std::ostringstream os;
    os << name << '(';
    char const* sep = "";
    for (auto const& [key, value] : items)
    {{
        os << sep << key << '=' << value;
        sep = ", ";
    }}
    os << ')';
    return os.str();
}}

}} // namespace tensorrt_llm::common
"""



def files() -> dict[str, str]:
    """path (relative to the tree) -> text of every generated file."""
    out = {"cpp/include/tensorrt_llm/common/stringUtils.h": STRING_UTILS_H,
           "cpp/tensorrt_llm/common/stringUtils.cpp": STRING_UTILS_CPP}
    for folder, cls, doc, fields in MODULES:
        out[f"cpp/include/tensorrt_llm/{folder}/{_lower(cls)}.h"] = _header(folder, cls, doc, fields)
        out[f"cpp/tensorrt_llm/{folder}/{_lower(cls)}.cpp"] = _source(folder, cls, doc, fields)
    return out


def write(tree: Path) -> list[str]:
    """Write them into tree; their paths."""
    made = files()
    for rel, text in made.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return sorted(made)
