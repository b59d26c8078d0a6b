"""STaRK native-format loader: a tiny PRIME-like fixture written with torch and pickle in STaRK's own layout."""

from __future__ import annotations

import csv
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from skbqa.common.errors import BundleError, InvalidInputError
from skbqa.skb.stark import is_stark_dir, load_stark_skb
from skbqa.skb.stark_qa import load_stark_qa

NODE_TYPE_DICT = {0: "disease", 1: "gene/protein", 2: "drug"}
EDGE_TYPE_DICT = {0: "ppi", 1: "associated with", 2: "indication", 3: "unused relation"}
NODE_TYPES = [1, 0, 2, 1, 0]
# (src, dst, relation code)
EDGES = [(0, 3, 0), (0, 1, 1), (1, 0, 1), (2, 1, 2), (3, 4, 1)]


def _node_info() -> dict[Any, dict[str, Any]]:
    info: dict[Any, dict[str, Any]] = {
        np.int64(3): {"type": "gene/protein", "title": "Gene Three", "source": "NCBI"},
        0: {
            "id": 9796,
            "type": "gene/protein",
            "name": "PHYHIP",
            "source": "NCBI",
            "details": {"summary": "A  phytanoyl\nprotein.", "alias": ["PAHXAP1", "DYRK1AP3"], "entrez_id": 5},
        },
        4: {"type": "disease", "source": "", "details": {}},
        1: {
            "id": "MONDO:1",
            "type": "disease",
            "name": "asthma",
            "details": {"mondo_definition": "a lung disease", "umls_description": np.float64("nan")},
        },
        np.int32(2): {
            "type": "drug",
            "name": np.str_("Aspirin"),
            "score": np.int64(7),
            "approved": np.bool_(True),
            "weight": np.float64(180.5),
            "details": {"half_life": np.float64(3.5), "targets": np.array([1, 2])},
            "review": [{"summary": "good", "vote": None}, {"summary": "fine", "vote": "3"}],
        },
    }
    return info


def write_skb(
    root: Path,
    *,
    node_info: Any = None,
    node_types: Any = None,
    edge_index: Any = None,
    edge_types: Any = None,
    node_type_dict: Any = NODE_TYPE_DICT,
    edge_type_dict: Any = EDGE_TYPE_DICT,
    protocol: int = pickle.DEFAULT_PROTOCOL,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if node_info is None:
        node_info = _node_info()
    if node_types is None:
        node_types = torch.LongTensor(NODE_TYPES)
    if edge_index is None:
        edge_index = torch.LongTensor([[s for s, _, _ in EDGES], [d for _, d, _ in EDGES]])
    if edge_types is None:
        edge_types = torch.LongTensor([t for _, _, t in EDGES])
    pickles = {"node_info": node_info, "node_type_dict": node_type_dict, "edge_type_dict": edge_type_dict}
    for key, value in pickles.items():
        if value is not None:
            with (root / f"{key}.pkl").open("wb") as handle:
                pickle.dump(value, handle, protocol=protocol)
    for key, tensor in {"node_types": node_types, "edge_index": edge_index, "edge_types": edge_types}.items():
        torch.save(tensor, root / f"{key}.pt")
    return root


def edge_triples(skb: Any) -> list[tuple[str, str, str]]:
    names = skb.schema.edge_names
    return [
        (skb.names[int(s)], names[int(t)], skb.names[int(d)])
        for s, t, d in zip(skb.edge_src, skb.edge_type, skb.edge_dst, strict=True)
    ]


# ------------------------------------------------------------------------------------------------ SKB


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_loads_types_names_edges_and_signatures(tmp_path: Path, protocol: int) -> None:
    skb = load_stark_skb(write_skb(tmp_path / "prime" / "processed", protocol=protocol))
    assert skb.schema.name == "prime"
    assert skb.schema.node_type_names == ["disease", "gene/protein", "drug"]
    assert skb.node_ids.tolist() == [0, 1, 2, 3, 4]
    assert [skb.type_name(i) for i in range(5)] == ["gene/protein", "disease", "drug", "gene/protein", "disease"]
    assert skb.names == ["PHYHIP", "asthma", "Aspirin", "Gene Three", "4"]
    # One signature per observed (relation, source type, target type); the unused relation has none.
    sigs = [(e.name, e.source, e.target) for e in skb.schema.edge_types]
    assert sigs == [
        ("ppi", "gene/protein", "gene/protein"),
        ("associated with", "disease", "gene/protein"),
        ("associated with", "gene/protein", "disease"),
        ("indication", "drug", "disease"),
    ]
    assert all(e.description == "" for e in skb.schema.edge_types)
    assert skb.schema.edge_names == ["ppi", "associated with", "indication"]
    assert not skb.schema.has_edge_type("unused relation")
    assert edge_triples(skb) == [
        ("PHYHIP", "ppi", "Gene Three"),
        ("PHYHIP", "associated with", "asthma"),
        ("asthma", "associated with", "PHYHIP"),
        ("Aspirin", "indication", "asthma"),
        ("Gene Three", "associated with", "4"),
    ]
    assert skb.edge_src.dtype == np.int32 and skb.edge_type.dtype == np.int16 and skb.node_type.dtype == np.int16
    assert skb.nodes_of_type("disease").tolist() == [1, 4]


def test_text_and_attrs(tmp_path: Path) -> None:
    skb = load_stark_skb(write_skb(tmp_path / "prime"))
    gene = skb.texts[0].splitlines()
    # name and type are not repeated, ids are hidden, nested dicts flattened, whitespace collapsed.
    assert gene == ["source: NCBI", "details.summary: A phytanoyl protein.", "details.alias: PAHXAP1; DYRK1AP3"]
    assert skb.texts[1] == "details.mondo_definition: a lung disease"  # NaN dropped
    assert skb.texts[4] == ""  # every field empty
    drug = skb.texts[2]
    assert "score: 7" in drug and "approved: True" in drug and "details.targets: 1; 2" in drug
    assert "review: {summary: good}; {summary: fine, vote: 3}" in drug
    assert skb.attrs[0] == {"id": 9796, "type": "gene/protein", "name": "PHYHIP", "source": "NCBI"}
    attrs = skb.attrs[2]
    assert attrs == {"type": "drug", "name": "Aspirin", "score": 7, "approved": True, "weight": 180.5}
    assert type(attrs["score"]) is int and type(attrs["approved"]) is bool and type(attrs["name"]) is str
    assert skb.attrs[4] == {"type": "disease"}
    name_attrs = {t.name: t.name_attr for t in skb.schema.node_types}
    assert name_attrs == {"disease": "name", "gene/protein": "name", "drug": "name"}


def test_text_is_length_capped(tmp_path: Path) -> None:
    info = _node_info()
    info[0]["details"]["summary"] = "word " * 5000
    info[2]["review"] = [{"summary": f"review {i}", "text": "x" * 50} for i in range(10_000)]
    skb = load_stark_skb(write_skb(tmp_path, node_info=info), max_field_chars=200, max_text_chars=500)
    for text in skb.texts:
        assert len(text) <= 500
        assert all(len(line) <= 200 for line in text.splitlines())
    assert skb.texts[0].splitlines()[1].endswith("…")


def test_resolves_dataset_root_and_amazon_cache(tmp_path: Path) -> None:
    write_skb(tmp_path / "prime" / "processed")
    assert is_stark_dir(tmp_path / "prime") and is_stark_dir(tmp_path / "prime" / "processed")
    assert load_stark_skb(tmp_path / "prime").num_nodes == 5
    cache = write_skb(tmp_path / "amazon" / "processed" / "cache" / "brand-category-color")
    (tmp_path / "amazon" / "processed" / "node_info.pkl").write_bytes(b"product-only graph")
    skb = load_stark_skb(tmp_path / "amazon")
    assert skb.schema.name == "amazon" and skb.num_edges == len(EDGES)
    assert is_stark_dir(cache)
    assert load_stark_skb(tmp_path / "amazon", name="custom").schema.name == "custom"


def test_is_stark_dir_false(tmp_path: Path) -> None:
    assert not is_stark_dir(tmp_path)
    assert not is_stark_dir(tmp_path / "missing")
    (tmp_path / "node_info.pkl").write_bytes(b"")
    assert not is_stark_dir(tmp_path)  # no edge_index.pt


def test_name_fallbacks_display_name_and_suffix(tmp_path: Path) -> None:
    info = {
        0: {"type": "author", "DisplayName": "Ada Lovelace", "PaperCount": 3, "mag_id": 11, "AuthorId": 5},
        1: {"type": "paper", "title": "On Engines", "abstract": "About engines.", "new_id": 1},
        2: {"type": "paper", "title": np.float64("nan"), "abstract": "Untitled."},
        3: {"brand_name": "Acme"},
    }
    root = write_skb(
        tmp_path / "mag" / "processed",
        node_info=info,
        node_types=torch.LongTensor([0, 1, 1, 2]),
        edge_index=torch.LongTensor([[0, 1], [1, 2]]),
        edge_types=torch.LongTensor([0, 1]),
        node_type_dict={0: "author", 1: "paper", 2: "brand"},
        edge_type_dict={0: "writes", 1: "cites"},
    )
    skb = load_stark_skb(root)
    assert skb.names == ["Ada Lovelace", "On Engines", "2", "Acme"]
    assert skb.texts[0] == "PaperCount: 3"  # mag_id / AuthorId are id-like: attrs only
    assert skb.attrs[0]["mag_id"] == 11
    assert skb.texts[1] == "abstract: About engines."
    assert {t.name: t.name_attr for t in skb.schema.node_types} == {
        "author": "DisplayName",
        "paper": "title",
        "brand": "brand_name",
    }


def test_mag_fallback_type_dicts(tmp_path: Path) -> None:
    info = {
        0: {"type": "author", "DisplayName": "Ada"},
        1: {"type": "institution", "DisplayName": "Uni"},
        2: {"type": "field_of_study", "DisplayName": "Math"},
        3: {"type": "paper", "title": "P"},
    }
    common: dict[str, Any] = {
        "node_types": torch.LongTensor([0, 1, 2, 3]),
        "edge_index": torch.LongTensor([[0, 0, 3], [1, 3, 2]]),
        "edge_types": torch.LongTensor([0, 3, 2]),
        "node_type_dict": None,
        "edge_type_dict": None,
    }
    skb = load_stark_skb(write_skb(tmp_path / "mag", node_info=info, **common))
    assert skb.schema.node_type_names == ["author", "institution", "field_of_study", "paper"]
    assert edge_triples(skb) == [
        ("Ada", "author___affiliated_with___institution", "Uni"),
        ("Ada", "author___writes___paper", "P"),
        ("P", "paper___has_topic___field_of_study", "Math"),
    ]
    # A node without a 'type' field cannot confirm the MAG constants.
    del info[3]["type"]
    with pytest.raises(BundleError) as exc:
        load_stark_skb(write_skb(tmp_path / "notmag", node_info=info, **common))
    assert exc.value.file == "node_type_dict.pkl" and "node 3" in exc.value.problem


def test_type_dicts_passed_in_override_files(tmp_path: Path) -> None:
    root = write_skb(tmp_path, node_type_dict=None, edge_type_dict=None, node_info=_untyped_info())
    skb = load_stark_skb(root, node_type_dict={0: "d", 1: "g", 2: "x"}, edge_type_dict={0: "a", 1: "b", 2: "c"})
    assert skb.schema.node_type_names == ["d", "g", "x"]
    assert skb.schema.edge_names == ["a", "b", "c"]


def _untyped_info() -> dict[int, dict[str, Any]]:
    return {i: {"name": f"n{i}"} for i in range(5)}


def test_float_node_types_accepted_when_integral(tmp_path: Path) -> None:
    skb = load_stark_skb(write_skb(tmp_path, node_types=torch.tensor(NODE_TYPES, dtype=torch.float32)))
    assert skb.type_name(2) == "drug"
    with pytest.raises(BundleError, match="integer tensor"):
        load_stark_skb(write_skb(tmp_path / "b", node_types=torch.tensor([1.0, 0.5, 2.0, 1.0, 0.0])))


# ----------------------------------------------------------------------------------------- SKB errors


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch pwned-by-pickle",))


def test_pickle_with_foreign_class_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    info = _node_info()
    info[0]["details"]["payload"] = _Evil()
    root = write_skb(tmp_path / "skb", node_info=info)
    with pytest.raises(BundleError) as exc:
        load_stark_skb(root)
    assert exc.value.file == "node_info.pkl"
    assert "system" in exc.value.problem and "untrusted" in exc.value.problem
    assert not (tmp_path / "pwned-by-pickle").exists()


def test_pickle_with_harmless_but_unlisted_class_is_refused(tmp_path: Path) -> None:
    from collections import OrderedDict

    root = write_skb(tmp_path, edge_type_dict=OrderedDict(EDGE_TYPE_DICT))
    with pytest.raises(BundleError, match=r"collections\.OrderedDict") as exc:
        load_stark_skb(root)
    assert exc.value.file == "edge_type_dict.pkl"


def test_codecs_encode_only_latin1(tmp_path: Path) -> None:
    # protocol 2 stores bytes via _codecs.encode(str, 'latin1'); any other codec is refused.
    payload = b"\x80\x02c_codecs\nencode\nX\x03\x00\x00\x00abcX\x04\x00\x00\x00zlib\x86R."
    (tmp_path / "x").mkdir()
    root = write_skb(tmp_path / "x")
    (root / "node_type_dict.pkl").write_bytes(payload)
    with pytest.raises(BundleError, match="zlib") as exc:
        load_stark_skb(root)
    assert exc.value.file == "node_type_dict.pkl"


def test_corrupt_pickle(tmp_path: Path) -> None:
    root = write_skb(tmp_path)
    (root / "node_info.pkl").write_bytes(b"\x80\x04not a pickle")
    with pytest.raises(BundleError) as exc:
        load_stark_skb(root)
    assert exc.value.file == "node_info.pkl"


def test_edge_endpoint_out_of_range(tmp_path: Path) -> None:
    root = write_skb(tmp_path, edge_index=torch.LongTensor([[0, 1, 2, 3, 4], [3, 0, 1, 5, 1]]))
    with pytest.raises(BundleError) as exc:
        load_stark_skb(root)
    assert exc.value.file == "edge_index.pt"
    assert "edge 3 (3 → 5)" in exc.value.problem and "0..4" in exc.value.problem
    root = write_skb(tmp_path / "neg", edge_index=torch.LongTensor([[0, -1, 2, 3, 4], [3, 0, 1, 4, 1]]))
    with pytest.raises(BundleError, match="edge 1"):
        load_stark_skb(root)


@pytest.mark.parametrize(
    ("kwargs", "file", "fragment"),
    [
        ({"edge_index": torch.LongTensor([[0, 1], [1, 2], [2, 3]])}, "edge_index.pt", "shape [2, E]"),
        ({"edge_index": torch.LongTensor([0, 1, 2])}, "edge_index.pt", "2-dimensional"),
        ({"edge_types": torch.LongTensor([0, 1])}, "edge_types.pt", "2 edge types for 5 edges"),
        ({"node_info": {i: {} for i in range(6)}}, "node_info.pkl", "6 nodes, but node_types.pt has 5"),
        ({"node_types": torch.LongTensor([1, 0, 7, 1, 0])}, "node_types.pt", "node 2 has type code 7"),
        ({"edge_types": torch.LongTensor([0, 1, 1, 9, 1])}, "edge_types.pt", "edge 3 has type code 9"),
        ({"node_types": torch.LongTensor([])}, "node_types.pt", "no nodes"),
        ({"edge_types": {"a": torch.zeros(5)}}, "edge_types.pt", "expected a tensor"),
        ({"node_type_dict": {0: "disease", 1: "disease", 2: "drug"}}, "node_type_dict.pkl", "unique"),
        ({"node_type_dict": {"zero": "disease"}}, "node_type_dict.pkl", "integer code"),
        ({"edge_type_dict": []}, "edge_type_dict.pkl", "non-empty dict"),
        ({"node_info": [1, 2, 3]}, "node_info.pkl", "expected a dict"),
        ({"node_info": {i + 1: {"name": "x"} for i in range(5)}}, "node_info.pkl", "node key 5"),
        (
            {"node_info": {**{i: {} for i in range(4)}, 4: "text"}},
            "node_info.pkl",
            "node 4: fields must be a dict",
        ),
        (
            {"node_info": {**{i: {} for i in range(4)}, 4: {"type": "drug"}}},
            "node_info.pkl",
            "node 4 has 'type' 'drug', but node_types.pt says 'disease'",
        ),
    ],
)
def test_malformed_skb(tmp_path: Path, kwargs: dict[str, Any], file: str, fragment: str) -> None:
    with pytest.raises(BundleError) as exc:
        load_stark_skb(write_skb(tmp_path, **kwargs))
    assert exc.value.file == file
    assert fragment in exc.value.problem
    assert str(exc.value).startswith(file)


@pytest.mark.parametrize(
    "missing", ["node_types.pt", "edge_index.pt", "edge_types.pt", "node_type_dict.pkl", "edge_type_dict.pkl"]
)
def test_missing_files(tmp_path: Path, missing: str) -> None:
    root = write_skb(tmp_path)
    (root / missing).unlink()
    with pytest.raises(BundleError) as exc:
        load_stark_skb(root)
    assert exc.value.file == missing and "not found" in exc.value.problem


def test_missing_node_info_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="STaRK directory not found"):
        load_stark_skb(tmp_path / "nope")
    with pytest.raises(BundleError) as exc:
        load_stark_skb(tmp_path)
    assert exc.value.file == "node_info.pkl" and "processed" in exc.value.problem


def test_pt_with_pickled_code_is_refused(tmp_path: Path) -> None:
    root = write_skb(tmp_path)
    torch.save({"edges": _Evil()}, root / "edge_types.pt")
    with pytest.raises(BundleError) as exc:
        load_stark_skb(root)
    assert exc.value.file == "edge_types.pt" and "weights_only" in exc.value.problem


# ------------------------------------------------------------------------------------------------- QA


def write_qa(
    root: Path, rows: list[dict[str, Any]], splits: dict[str, list[int]] | None = None, index_col: bool = False
) -> Path:
    """STaRK's layout: <root>/stark_qa/stark_qa.csv and <root>/split/<split>.index."""
    qa_dir = root / "stark_qa"
    qa_dir.mkdir(parents=True, exist_ok=True)
    path = qa_dir / "stark_qa.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        fields = list(rows[0])
        writer = csv.writer(handle)
        writer.writerow(([""] if index_col else []) + fields)
        for i, row in enumerate(rows):
            writer.writerow(([i] if index_col else []) + [row[f] for f in fields])
    if splits is not None:
        (root / "split").mkdir(exist_ok=True)
        for name, ids in splits.items():
            (root / "split" / f"{name}.index").write_text("\n".join(map(str, ids)) + "\n")
    return path


QA_ROWS = [
    {"id": 10, "query": "Which drug treats asthma?", "answer_ids": "[2]"},
    {"id": 11, "query": "Genes linked to asthma,\nplease?", "answer_ids": "[0, 3]"},
    {"id": 12, "query": "What interacts with PHYHIP?", "answer_ids": "[3]"},
    {"id": 13, "query": "Any disease?", "answer_ids": "(1, 4)"},
]
SPLITS = {"train": [12, 10], "val": [11], "test": [13]}


def test_qa_all_rows(tmp_path: Path) -> None:
    items = load_stark_qa(write_qa(tmp_path, QA_ROWS, SPLITS, index_col=True))
    assert [i.id for i in items] == ["10", "11", "12", "13"]
    assert [i.answers for i in items] == [[2], [0, 3], [3], [1, 4]]
    assert items[1].question == "Genes linked to asthma,\nplease?"
    assert all(i.meta == {} for i in items)


def test_qa_split_filter_uses_index_order_and_finds_split_dir(tmp_path: Path) -> None:
    path = write_qa(tmp_path / "prime", QA_ROWS, SPLITS)
    train = load_stark_qa(path, split="train")
    assert [i.id for i in train] == ["12", "10"]
    assert all(i.meta["split"] == "train" for i in train)
    assert [i.answers for i in load_stark_qa(path, split="test")] == [[1, 4]]
    # explicit split_dir, and the QA root directory instead of the csv
    assert [i.id for i in load_stark_qa(tmp_path / "prime", tmp_path / "prime" / "split", "val")] == ["11"]


def test_qa_split_dir_annotates_every_item(tmp_path: Path) -> None:
    path = write_qa(tmp_path, QA_ROWS, {"train": [10, 12], "test": [13]})
    items = load_stark_qa(path, split_dir=tmp_path / "split")
    assert [i.meta.get("split") for i in items] == ["train", None, "train", "test"]


def test_qa_extra_columns_go_to_meta(tmp_path: Path) -> None:
    rows = [{**QA_ROWS[0], "template": "drug-treats"}, {**QA_ROWS[1], "template": ""}]
    items = load_stark_qa(write_qa(tmp_path, rows))
    assert items[0].meta == {"template": "drug-treats"} and items[1].meta == {}


@pytest.mark.parametrize(
    "bad", ["__import__('os').system('true')", "[1, 'a']", "[1, True]", "not a list", "5", "{1: 2}", ""]
)
def test_qa_bad_answer_ids(tmp_path: Path, bad: str) -> None:
    rows = [QA_ROWS[0], {"id": 11, "query": "Two\nlines?", "answer_ids": "[1]"}, {**QA_ROWS[2], "answer_ids": bad}]
    with pytest.raises(BundleError) as exc:
        load_stark_qa(write_qa(tmp_path, rows))
    assert exc.value.file == "stark_qa.csv"
    assert exc.value.line == 5  # header, row 10, row 11 on lines 3-4, then the bad row
    assert "answer_ids" in exc.value.problem


@pytest.mark.parametrize(
    ("rows", "line", "fragment"),
    [
        ([QA_ROWS[0], {**QA_ROWS[1], "id": "x1"}], 3, "'id' must be an integer"),
        ([QA_ROWS[0], QA_ROWS[2], {**QA_ROWS[3], "id": 10}], 4, "duplicate query id 10 (first seen on line 2)"),
        ([QA_ROWS[0], {**QA_ROWS[2], "query": "  "}], 3, "non-empty"),
        ([{"id": 1, "question": "q", "answer_ids": "[1]"}], 1, "missing column(s) query"),
    ],
)
def test_qa_malformed_rows(tmp_path: Path, rows: list[dict[str, Any]], line: int, fragment: str) -> None:
    with pytest.raises(BundleError) as exc:
        load_stark_qa(write_qa(tmp_path, rows))
    assert (exc.value.file, exc.value.line) == ("stark_qa.csv", line)
    assert fragment in exc.value.problem


def test_qa_wrong_field_count(tmp_path: Path) -> None:
    path = write_qa(tmp_path, QA_ROWS[:1])
    with path.open("a", encoding="utf-8") as handle:
        handle.write('11,"q?"\n')
    with pytest.raises(BundleError, match=r"stark_qa\.csv:3: expected 3 fields, got 2"):
        load_stark_qa(path)


def test_qa_split_errors(tmp_path: Path) -> None:
    path = write_qa(tmp_path, QA_ROWS, {"train": [10, 99], "val": [11, 11], "test": []})
    with pytest.raises(BundleError) as exc:
        load_stark_qa(path, split="train")
    assert (exc.value.file, exc.value.line) == ("train.index", 2) and "99" in exc.value.problem
    with pytest.raises(BundleError, match=r"val\.index:2: query id 11 is listed twice"):
        load_stark_qa(path, split="val")
    with pytest.raises(BundleError, match="split file not found"):
        load_stark_qa(path, split="dev")
    (tmp_path / "split" / "test.index").write_text("10\nabc\n")
    with pytest.raises(BundleError, match=r"test\.index:2: expected an integer"):
        load_stark_qa(path, split="test")
    with pytest.raises(InvalidInputError):
        load_stark_qa(path, split="../etc")


def test_qa_id_in_two_splits(tmp_path: Path) -> None:
    path = write_qa(tmp_path, QA_ROWS, {"train": [10, 11], "val": [11]})
    with pytest.raises(BundleError, match=r"val\.index:1: query id 11 is also listed in train\.index"):
        load_stark_qa(path, split_dir=tmp_path / "split")


def test_qa_missing_files(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="QA file not found"):
        load_stark_qa(tmp_path / "stark_qa.csv")
    with pytest.raises(BundleError, match="also looked in stark_qa/"):
        load_stark_qa(tmp_path)
    path = write_qa(tmp_path / "q", QA_ROWS)
    with pytest.raises(BundleError, match="no split directory found"):
        load_stark_qa(path, split="train")
    with pytest.raises(BundleError, match="split directory not found"):
        load_stark_qa(path, split_dir=tmp_path / "nosplit")
