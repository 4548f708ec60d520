"""What a sample must satisfy (pure, shared by stage3, the filter and annotation): its schema and
call format, grounding and derived values, picks over responses, and the filter's verdicts."""
