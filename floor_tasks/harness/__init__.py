"""The AgentFloor harness: run agents over tasks, record run corpora, report and compare."""
