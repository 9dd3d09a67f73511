"""SNS Publish rejects a subject of 100 characters or more ("must be less than 100 characters long")."""

from hyperpod_perf.aws.sns import safe_subject


def test_subject_of_99_characters_is_kept_whole() -> None:
    subject = "x" * 99
    assert safe_subject(subject) == subject


def test_subject_of_100_characters_is_cut_to_99() -> None:
    assert safe_subject("y" * 100) == "y" * 99


def test_non_ascii_and_line_breaks_become_question_marks() -> None:
    assert safe_subject("GPU … down\nnow") == "GPU ? down?now"


def test_empty_subject_gets_the_product_name() -> None:
    assert safe_subject("") == "hyperpod-perf"
