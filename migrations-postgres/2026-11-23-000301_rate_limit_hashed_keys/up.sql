-- Rate-limit keys are now keyed hashes of the client address or e-mail address. Counters under
-- the old keys held addresses in clear; they last seconds, so dropping them loses nothing.
DELETE FROM auth.rate_limit WHERE key !~ ':(ip|email|user):[A-Za-z0-9_-]{43}$';
