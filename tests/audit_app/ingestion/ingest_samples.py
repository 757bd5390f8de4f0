"""A small hand-checked generic CSV, shared by the service, API, page and CLI tests.

Expected values, worked out by hand (prices: seeded cards gpt-4o $2.50/$10 per 1M tokens,
gpt-4o-mini batch $0.075 input per 1M):
- line 2: chat, gpt-4o, 1,000 in / 500 out, no cost in the log -> 0.0025 + 0.005 = $0.0075
- line 3: chat, gpt-4o, 2,000 in / 100 out, log cost $0.01
- line 4: evals, gpt-4o-mini batch, 1,000,000 in / 1 out, no cost -> 0.075 + 0.0000003
- line 5: tool, my-finetune (no card), 100 in / 10 out, no cost -> unpriced
- line 6: negative input tokens -> rejected
- line 7: end before start -> rejected
"""

from __future__ import annotations

from decimal import Decimal

SAMPLE_CSV = (
    b"started_at,ended_at,first_token_at,workload,team,end_user,caller,provider,model,"
    b"operation,streaming,batch_api,input_tokens,output_tokens,cached_input_tokens,cost_usd,"
    b"status,request_id,pool\n"
    b"2026-11-02T10:00:00Z,2026-11-02T10:00:02Z,2026-11-02T10:00:00.500Z,chat,web,u1,web-api,"
    b"openai,gpt-4o,chat,true,false,1000,500,0,,success,r1,\n"
    b"2026-11-02T10:30:00Z,2026-11-02T10:30:01Z,,chat,web,u2,web-api,"
    b"openai,gpt-4o,chat,false,false,2000,100,0,0.01,success,r2,\n"
    b"2026-11-02T11:30:00Z,2026-11-02T11:40:00Z,,evals,ml,,eval-runner,"
    b"openai,gpt-4o-mini,chat,false,true,1000000,1,0,,success,r3,\n"
    b"2026-11-02T12:00:00Z,2026-11-02T12:00:01Z,,tool,ops,,ops-bot,"
    b"openai,my-finetune,chat,false,false,100,10,0,,success,r4,\n"
    b"2026-11-02T12:05:00Z,2026-11-02T12:05:01Z,,tool,ops,,ops-bot,"
    b"openai,gpt-4o,chat,false,false,-3,10,0,,success,r5,\n"
    b"2026-11-02T12:10:00Z,2026-11-02T12:09:00Z,,tool,ops,,ops-bot,"
    b"openai,gpt-4o,chat,false,false,3,10,0,,success,r6,\n"
)

EXPECTED_COST = {
    "chat": Decimal("0.0175"),
    "evals": Decimal("0.0750003"),
}
EXPECTED_TOTAL_COST = Decimal("0.0925003")
EXPECTED_INPUT_TOKENS = 1000 + 2000 + 1_000_000 + 100
EXPECTED_OUTPUT_TOKENS = 500 + 100 + 1 + 10
EXPECTED_REJECT_LINES = [6, 7]
