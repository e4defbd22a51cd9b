-- Billing webhooks arrive out of order (retries, parallel deliveries): the time of the last
-- event applied to a subscription, in microseconds; an older event is recorded but cannot roll
-- the subscription back (issue 28). NULL: no event applied yet.
ALTER TABLE subscriptions ADD COLUMN last_event_at BIGINT NULL;

-- An authorization code presented after it was used (RFC 6749 4.1.2): when; the tokens issued
-- from it are revoked, and an exchange still in flight checks this after issuing them.
ALTER TABLE oauth_codes ADD COLUMN replayed_at BIGINT NULL;
