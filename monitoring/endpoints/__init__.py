"""Live retrieval endpoints: the spec of one (`spec`), how requests are written and answers
read (`mapping`), the addresses allowed (`addresses`) and the bounded async client
(`client`). Plain data in, plain data out: no model, no database, so the integrator's
tasks and pages call these with a spec made from a row."""
