from fcbench.sample import Call, Difficulty, Sample, Tool, path_shape, sample_from_dict, sample_to_dict


def _sample(steps):
    return Sample(id="s", messages=[{"role": "user", "content": "q"}], tools=[Tool(name="f")], calls=steps)


def test_shape_of_a_nested_path():
    sample = _sample([
        [Call(label="a", name="f", arguments={"x": 1}), Call(label="b", name="f")],
        [Call(label="c", name="f", arguments={"ids": ["$a.items[0].id$", {"k": "$b$"}]})],
        [Call(label="d", name="f", arguments={"y": "$c.result$"})],
    ])
    shape = path_shape(sample)
    assert shape.difficulty is Difficulty.NESTED
    assert (shape.n_steps, shape.n_calls, shape.nesting_depth, shape.n_dependencies) == (3, 4, 2, 3)


def test_shape_without_references():
    assert path_shape(_sample([])).difficulty is Difficulty.NONE
    assert path_shape(_sample([[Call(label="a", name="f")]])).difficulty is Difficulty.SINGLE
    two = _sample([[Call(label="a", name="f")], [Call(label="b", name="f", arguments={"v": "$ not a ref"})]])
    assert path_shape(two).difficulty is Difficulty.MULTIPLE


def test_unset_response_stays_absent_but_null_response_is_kept():
    sample = _sample([[Call(label="a", name="f"), Call(label="b", name="f", response=None)]])
    record = sample_to_dict(sample)
    assert "response" not in record["calls"][0][0]
    assert record["calls"][0][1]["response"] is None
    assert record["difficulty"] == "multiple"
    assert sample_to_dict(sample_from_dict(record)) == record
