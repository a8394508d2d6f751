"""Models fitted on pandas DataFrames and on text: one input per column (or one of text),
answered as the model answers the same frame in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from flask_predict import FailedPrecondition, InvalidInput
from flask_predict_sklearn import SklearnPredictor

RNG = np.random.default_rng(0)
N = 240
PEOPLE = pd.DataFrame({
    "age": RNG.integers(18, 80, N),
    "income": RNG.normal(50_000, 12_000, N),
    "city": RNG.choice(["Paris", "London", "Rome"], N),
    "review": RNG.choice(["great value", "poor service", "ok", "great staff"], N),
    "note": RNG.choice(["a", "b"], N),
})
BOUGHT = ((PEOPLE.city == "Paris") | (PEOPLE.age > 50)).to_numpy()
SENT = pd.DataFrame({"age": [30, 64, 41], "income": [41_000.0, 80_500.5, 52_000.0],
                     "city": ["Paris", "Rome", "London"],
                     "review": ["great value", "poor staff", "ok"], "note": ["a", "b", "z"]})


def served(folder: Path, model: Any) -> SklearnPredictor:
    folder.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, folder / "model.joblib")
    return SklearnPredictor.from_path(str(folder))


def text(values: Any) -> np.ndarray:
    """Text as the codecs decode it: an object array of UTF-8 bytes."""
    out = np.empty(len(values), dtype=object)
    out[:] = [str(v).encode() for v in values]
    return out


def columns_of(frame: pd.DataFrame, texts: tuple[str, ...] = ("city", "review", "note")
               ) -> dict[str, np.ndarray]:
    return {name: text(frame[name]) if name in texts else frame[name].to_numpy(np.float64)
            for name in frame}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, SklearnPredictor]:
    """Numbers scaled, a strict one-hot city, a text column vectorized, a column dropped."""
    model = make_pipeline(ColumnTransformer([
        ("numbers", StandardScaler(), ["age", "income"]),
        ("city", OneHotEncoder(handle_unknown="error"), ["city"]),
        ("review", TfidfVectorizer(), "review"),
        ("note", "drop", ["note"])]), LogisticRegression()).fit(PEOPLE, BOUGHT)
    return model, served(tmp_path_factory.mktemp("mixed"), model)


def test_metadata_names_each_column_with_its_type(mixed: tuple[Any, SklearnPredictor]) -> None:
    meta = mixed[1].metadata()
    assert meta.signature.tabular
    assert [(s.name, s.datatype, s.shape) for s in meta.signature.inputs] == [
        ("age", "FP64", (-1,)), ("income", "FP64", (-1,)), ("city", "BYTES", (-1,)),
        ("review", "BYTES", (-1,)), ("note", "BYTES", (-1,))]
    assert meta.properties["categories"] == {"city": ["London", "Paris", "Rome"]}
    assert meta.properties["feature_names"] == list(PEOPLE)


def test_columns_answer_as_the_model_answers_the_frame(
        mixed: tuple[Any, SklearnPredictor]) -> None:
    model, predictor = mixed
    out = predictor.predict_tensors(columns_of(SENT))
    assert out["predict"].tolist() == model.predict(SENT).tolist()
    np.testing.assert_array_equal(out["predict_proba"], model.predict_proba(SENT))
    # the instances door: objects keyed by column, and plain rows in the columns' order
    objects = SENT.to_dict(orient="records")
    assert predictor.predict(objects) == model.predict(SENT).tolist()
    assert predictor.predict(SENT.to_numpy().tolist()) == model.predict(SENT).tolist()
    # [N, 1] columns, as MLServer's pandas codec sends them
    tall = {name: values.reshape(-1, 1) for name, values in columns_of(SENT).items()}
    assert predictor.predict_tensors(tall, ["predict"])["predict"].tolist() == \
        model.predict(SENT).tolist()


@pytest.mark.parametrize(("change", "message"), [
    ({"city": text(["Paris", "Berlin", "Rome"])},
     "column 'city': unknown category \"Berlin\"; the model knows ['London', 'Paris', 'Rome']"),
    ({"age": text(["30", "64", "41"])}, "column 'age': expected numbers, got text"),
    ({"city": np.array([1.0, 2.0, 3.0])}, "column 'city': expected text, got numbers"),
    ({"zip": np.ones(3)}, "unknown input(s) ['zip']"),
    ({"age": None}, "missing column(s) ['age']"),
    ({"income": np.ones(2)}, "columns hold different numbers of rows: 'age' 3, 'income' 2"),
])
def test_a_wrong_column_is_the_clients_error_naming_it(
        mixed: tuple[Any, SklearnPredictor], change: dict[str, Any], message: str) -> None:
    inputs = {**columns_of(SENT), **change}
    inputs = {name: values for name, values in inputs.items() if values is not None}
    with pytest.raises(InvalidInput) as caught:
        mixed[1].predict_tensors(inputs)
    assert message in caught.value.message


def test_a_vectorized_column_takes_no_missing_text(
        mixed: tuple[Any, SklearnPredictor]) -> None:
    """A vectorizer fails on a missing text (a server error): it is the client's error,
    found before the model runs."""
    review = text(SENT.review)
    review[1] = None
    with pytest.raises(InvalidInput, match="column 'review': value 1 is missing"):
        mixed[1].predict_tensors({**columns_of(SENT), "review": review})


def test_a_dropped_column_takes_any_value(mixed: tuple[Any, SklearnPredictor]) -> None:
    model, predictor = mixed
    inputs = {**columns_of(SENT), "note": np.array([1, 2, 3])}
    assert predictor.predict_tensors(inputs, ["predict"])["predict"].tolist() == \
        model.predict(SENT).tolist()


def test_an_unknown_category_reaches_a_lenient_encoder(tmp_path: Path) -> None:
    """``handle_unknown="ignore"``: an unseen city is all zeros, as the encoder reads it."""
    model = make_pipeline(ColumnTransformer([
        ("numbers", "passthrough", ["age"]),
        ("city", OneHotEncoder(handle_unknown="ignore"), ["city"])]),
        LogisticRegression(max_iter=1000)).fit(PEOPLE[["age", "city"]], BOUGHT)
    predictor = served(tmp_path, model)
    sent = pd.DataFrame({"age": [30.0], "city": ["Berlin"]})
    out = predictor.predict_tensors({"age": np.array([30.0]), "city": text(["Berlin"])})
    np.testing.assert_array_equal(out["predict_proba"], model.predict_proba(sent))
    assert not predictor.layout.columns[1].strict  # type: ignore[union-attr]


def test_imputed_text_and_numbers_take_missing_values(tmp_path: Path) -> None:
    people = PEOPLE[["age", "city"]].astype({"age": float})
    people.loc[::9, "age"] = np.nan
    people.loc[::7, "city"] = np.nan
    model = make_pipeline(ColumnTransformer([
        ("age", SimpleImputer(), ["age"]),
        ("city", make_pipeline(SimpleImputer(strategy="most_frequent"),
                               OrdinalEncoder(handle_unknown="error")), ["city"])]),
        RandomForestClassifier(n_estimators=10, random_state=0)).fit(people, BOUGHT)
    predictor = served(tmp_path, model)
    (age, city) = predictor.metadata().signature.inputs
    assert (age.datatype, city.datatype) == ("FP64", "BYTES")
    city_column = predictor.layout.columns[1]  # type: ignore[union-attr]
    assert city_column.strict and city_column.missing_ok
    cities = np.array([None, b"Rome"], dtype=object)
    out = predictor.predict_tensors({"age": np.array([np.nan, 33.0]), "city": cities})
    sent = pd.DataFrame({"age": [np.nan, 33.0], "city": [np.nan, "Rome"]})
    np.testing.assert_array_equal(out["predict_proba"], model.predict_proba(sent))
    with pytest.raises(InvalidInput, match="column 'city': unknown category \"Oslo\""):
        predictor.predict_tensors({"age": np.array([1.0]), "city": text(["Oslo"])})


def test_numeric_categories_are_numbers_checked_by_value(tmp_path: Path) -> None:
    frame = pd.DataFrame({"grade": RNG.choice([3, 7, 11], N), "x": RNG.normal(size=N)})
    model = make_pipeline(ColumnTransformer([("grade", OneHotEncoder(), ["grade"]),
                                             ("x", "passthrough", ["x"])]),
                          LogisticRegression()).fit(frame, frame.grade == 7)
    predictor = served(tmp_path, model)
    assert predictor.metadata().properties["categories"] == {"grade": [3, 7, 11]}
    assert predictor.predict([{"grade": 7, "x": 0.5}]) == model.predict(
        pd.DataFrame({"grade": [7], "x": [0.5]})).tolist()
    with pytest.raises(InvalidInput, match="column 'grade': unknown category 5"):
        predictor.predict([{"grade": 5, "x": 0.5}])


def test_a_frame_of_numbers_takes_columns_rows_or_one_matrix(tmp_path: Path) -> None:
    """No feature-name warning (pytest makes warnings errors): the columns become one
    matrix, answered to the last bit as the model answers the frame."""
    numbers = PEOPLE[["age", "income"]] / [100, 100_000]
    model = LogisticRegression().fit(numbers, BOUGHT)
    predictor = served(tmp_path, model)
    assert predictor.layout is not None and predictor.numbers == ("age", "income")
    assert predictor.linear and predictor.one_pass is not None
    expected = model.predict_proba(numbers[:4])
    for inputs in ({"age": numbers.age[:4].to_numpy(), "income": numbers.income[:4].to_numpy()},
                   {"inputs": numbers[:4].to_numpy()}):
        np.testing.assert_array_equal(predictor.predict_tensors(inputs)["predict_proba"],
                                      expected)
    assert predictor.predict(numbers[:4].to_numpy().tolist()) == model.predict(
        numbers[:4]).tolist()


def test_categories_of_a_histogram_booster_are_pandas_categories(tmp_path: Path) -> None:
    """An unknown category is missing there (the model's own reading), not an error."""
    frame = PEOPLE[["age", "city"]].astype({"city": "category"})
    model = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(frame, BOUGHT)
    predictor = served(tmp_path, model)
    assert predictor.layout is not None and predictor.layout.pandas_categories == {"city"}
    assert [s.datatype for s in predictor.metadata().signature.inputs] == ["FP64", "BYTES"]
    sent = pd.DataFrame({"age": [30.0, 70.0, 30.0],
                         "city": pd.Categorical(["Rome", "Paris", None],
                                                categories=["London", "Paris", "Rome"])})
    out = predictor.predict_tensors({"age": sent.age.to_numpy(),
                                     "city": text(["Rome", "Paris", "Oslo"])})
    np.testing.assert_array_equal(out["predict_proba"], model.predict_proba(sent))


REVIEWS = ["good movie", "bad movie", "great film", "awful film", "good plot", "bad acting"]
LIKED = [1, 0, 1, 0, 1, 0]


@pytest.mark.parametrize("model", [
    make_pipeline(TfidfVectorizer(), LogisticRegression()),
    make_pipeline(FeatureUnion([("words", CountVectorizer()),
                                ("letters", TfidfVectorizer(analyzer="char"))]),
                  LogisticRegression()),
], ids=["tfidf", "feature-union"])
def test_a_text_pipeline_takes_text(tmp_path: Path, model: Any) -> None:
    model.fit(REVIEWS, LIKED)
    predictor = served(tmp_path, model)
    (only,) = predictor.metadata().signature.inputs
    assert (only.name, only.datatype, only.shape) == ("inputs", "BYTES", (-1,))
    asked = ["good film", "awful acting", "ok"]
    assert predictor.predict(asked) == model.predict(asked).tolist()
    out = predictor.predict_tensors({"text": text(asked).reshape(-1, 1)})
    np.testing.assert_array_equal(out["predict_proba"], model.predict_proba(asked))
    with pytest.raises(InvalidInput, match="column 'inputs': expected text, got numbers"):
        predictor.predict_tensors({"inputs": np.array([1.0])})
    with pytest.raises(InvalidInput, match="column 'inputs': value 0 is not UTF-8 text"):
        predictor.predict_tensors({"inputs": np.array([b"\xff"], dtype=object)})


def test_a_matrix_model_keeps_one_input(tmp_path: Path) -> None:
    predictor = served(tmp_path, LogisticRegression().fit(np.eye(4), [0, 1, 0, 1]))
    assert predictor.layout is None and predictor.linear
    assert not predictor.metadata().signature.tabular


def test_tf_examples_map_onto_the_columns(mixed: tuple[Any, SklearnPredictor]) -> None:
    """TF Serving's ``:classify``: one feature per column, text as bytes_list."""
    model, predictor = mixed
    examples = [{"age": np.array([row.age], np.int64), "income": np.array([row.income],
                                                                           np.float32),
                 "city": text([row.city]), "review": text([row.review]), "note": text(["a"])}
                for row in SENT.itertuples()]
    sent = SENT.astype({"income": np.float32})
    scores = predictor.classify(examples).scores
    assert scores is not None
    np.testing.assert_allclose(scores, model.predict_proba(sent), rtol=1e-12)


@pytest.mark.parametrize("wrap", [lambda v: make_pipeline(v, LogisticRegression()),
                                  lambda v: make_pipeline(ColumnTransformer([("t", v, "t")]),
                                                          LogisticRegression())],
                         ids=["text", "column"])
def test_a_vectorizer_that_opens_files_is_refused(tmp_path: Path, wrap: Any) -> None:
    """``input="filename"`` would open whatever file a request names."""
    for name, review in enumerate(REVIEWS):
        (tmp_path / str(name)).write_text(review)
    files = [str(tmp_path / str(name)) for name in range(len(REVIEWS))]
    model = wrap(TfidfVectorizer(input="filename"))
    model.fit(pd.DataFrame({"t": files}) if "Column" in repr(model) else files, LIKED)
    folder = tmp_path / "model"
    folder.mkdir()
    joblib.dump(model, folder / "model.joblib")
    with pytest.raises(TypeError, match=r"TfidfVectorizer\(input='filename'\) would read"):
        SklearnPredictor.from_path(str(folder))


@pytest.mark.parametrize("bad, said", [(None, "is missing (null or NaN)"),
                                        (np.inf, "is infinite")])
def test_a_number_the_model_refuses_is_named_by_its_column(tmp_path: Path, bad: Any,
                                                           said: str) -> None:
    """A LogisticRegression fitted on a DataFrame takes no NaN: its refusal (several lines of
    scikit-learn's advice) answers one line naming the column and the value."""
    from sklearn.linear_model import LogisticRegression

    people = pd.DataFrame({"plan": [1.0, 2.0, 3.0, 4.0], "tenure": [1.0, 5.0, 2.0, 8.0]})
    predictor = served(tmp_path, LogisticRegression().fit(people, [0, 1, 0, 1]))
    tenure = np.array([3.0, np.nan if bad is None else bad])
    with pytest.raises(FailedPrecondition) as caught:
        predictor.predict_tensors({"plan": np.array([1.0, 2.0]), "tenure": tenure})
    assert caught.value.message == (f"column 'tenure': value 1 {said}" + (
        "; the model takes no missing value there" if bad is None else
        " (or past the model's float range); the model takes no infinite value"))
