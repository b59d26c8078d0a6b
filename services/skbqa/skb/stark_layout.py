"""Where STaRK keeps a processed SKB, and what its files are called (snap-stanford/stark `save_files`).

One directory holds every dict as `<key>.pkl` and every tensor as `<key>.pt`: `node_info.pkl` (node index →
fields), `node_types.pt` ([N] type codes), `node_type_dict.pkl`, `edge_index.pt` ([2, E]: sources, targets),
`edge_types.pt` ([E] relation codes), `edge_type_dict.pkl`. PRIME keeps it in `<root>/prime/processed/`,
Amazon in `<root>/amazon/processed/cache/brand-category-color/` (`processed/` itself holds only the product
graph), MAG in `<root>/mag/processed/` without the two type dicts, which `MagSKB` keeps as class constants.
"""

from __future__ import annotations

from pathlib import Path

NODE_INFO = "node_info.pkl"
NODE_TYPES = "node_types.pt"
NODE_TYPE_DICT = "node_type_dict.pkl"
EDGE_INDEX = "edge_index.pt"
EDGE_TYPES = "edge_types.pt"
EDGE_TYPE_DICT = "edge_type_dict.pkl"

# `MagSKB.node_type_dict` / `MagSKB.edge_type_dict` (stark_qa/skb/mag.py): MAG's processed directory omits them.
MAG_NODE_TYPES = {0: "author", 1: "institution", 2: "field_of_study", 3: "paper"}
MAG_EDGE_TYPES = {
    0: "author___affiliated_with___institution",
    1: "paper___cites___paper",
    2: "paper___has_topic___field_of_study",
    3: "author___writes___paper",
}

_SUBDIRS = (Path("processed") / "cache" / "brand-category-color", Path("processed"))


def _resolve_dir(directory: Path) -> Path | None:
    for candidate in (directory, *(directory / sub for sub in _SUBDIRS)):
        if (candidate / NODE_INFO).is_file():
            return candidate
    return None


def _dataset_name(data_dir: Path) -> str:
    p = data_dir.resolve()
    while p.parent != p and (p.name in ("processed", "cache") or p.parent.name == "cache"):
        p = p.parent
    return p.name or "stark"
