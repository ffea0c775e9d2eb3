"""Answer layer on SciFact's annotated claim-abstract pairs, with the offline embedding judge
(``rag_judge``, configured by ragmetrics_judge in pyproject.toml).

Each claim is treated as an answer and its abstract's sentences as the context it was generated
from; groundedness is the share of claims the judge finds supported by their context. The
annotators labelled every pair SUPPORT / CONTRADICT / NOINFO, so the judge's agreement with
people (Cohen's kappa) is measured on the same pairs and reported next to the number.
ragmetrics_min_judge_kappa (pyproject.toml) refuses to let a judge below that kappa fail tests.
"""

from __future__ import annotations

import pytest

from pytest_ragmetrics.judges import agreement, assess_many, read_claim_labels


@pytest.mark.rag_threshold(groundedness=0.45)
def test_claims_grounded_in_their_abstracts(rag_eval, rag_judge, claim_pairs_path):
    pairs = read_claim_labels(claim_pairs_path)
    # assess_many judges them in order, with a progress bar (minutes on a cold cache).
    assessments = assess_many(
        rag_judge, [(pair.claim, pair.claim, list(pair.contexts), pair.id) for pair in pairs]
    )
    evaluation = rag_eval.answers(assessments, name="embedding judge")
    people = agreement(
        [pair.supported for pair in pairs],
        [assessment.groundedness == 1.0 for assessment in assessments],
    )
    supported_by_people = sum(pair.supported for pair in pairs) / len(pairs)
    evaluation.notes.append(
        f"agreement with the annotators on these {people.n} pairs: Cohen's kappa "
        f"{people.kappa:.3f}, accuracy {people.accuracy:.3f}; annotators found "
        f"{supported_by_people:.3f} of the claims supported"
    )
    assert people.kappa > 0.2, "the judge no longer agrees with people better than chance"
