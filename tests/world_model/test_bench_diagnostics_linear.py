"""diagnose() reads the whole observation, however long (the env's 65,536-character cut is
for what an agent is shown, not for the bench's rule diagnostics)."""

from agentworld_envs.bench.diagnostics import apply_rules, diagnose
from agentworld_envs.world.parsing import clean_response_marker, parse_model_output


def test_long_observation_is_counted_whole() -> None:
    body = "x" * 70_000 + " it would probably fail"
    output = f"<predicted_observation>\n{body}\n</predicted_observation>"
    diagnostics = diagnose(output)
    prediction = clean_response_marker(parse_model_output(output))
    assert diagnostics.extracted_output_chars == len(prediction) == len(body)
    assert diagnostics.raw_nonfinal_chars == len(output) - len(body)
    assert diagnostics.observation_speculative_word_count == 2
    assert apply_rules({"realism": 5.0}, diagnostics)[2] == ["hedging"]


def test_a_long_prediction_equal_to_its_truth_gets_full_facts() -> None:
    """The world-model RL rule reward compares the whole prediction with the whole truth (it
    cut the prediction at the env's 65,536 characters, so a perfect long one scored 0)."""
    from trainers.world_model.rewards import rule_checks

    truth = "\n".join(f"line {i}: " + "y" * 60 for i in range(1100))
    checks = rule_checks(f"<predicted_observation>\n{truth}\n</predicted_observation>", truth)
    assert len(truth) > 65_536 and checks["facts"] == 1.0
