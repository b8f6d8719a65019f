"""Team policies: small torch MLPs for symbolic teams, transformers causal LMs for text teams."""
