-- Billing webhooks arrive out of order (retries, parallel deliveries): the time of the last
-- event applied to a subscription, in microseconds; an older event is recorded but cannot roll
-- the subscription back (issue 28). NULL: no event applied yet.
ALTER TABLE subscriptions ADD COLUMN last_event_at BIGINT NULL;
