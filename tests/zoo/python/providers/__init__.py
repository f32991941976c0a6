"""One module per provider: verify(raw, headers, secret) returns the parsed
event or raises ValueError; describe(event, headers) says what it is."""
