-- Preload :jobs no-op jobs in batches of 1000 rows per transaction (psql -v jobs=N).
-- Ids are time-ordered like UUIDv7 (a sequence in the low bits keeps them unique).
SELECT format($f$
INSERT INTO sqlbus_messages (id, queue, payload, created_at, available_at)
SELECT (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0')
        || '7000' || '8' || lpad(to_hex(g), 15, '0'))::uuid,
       'bench', convert_to(g::text, 'UTF8'), clock_timestamp(), clock_timestamp()
FROM generate_series(%s, %s) g;$f$, b * 1000, least(b * 1000 + 999, :jobs - 1))
FROM generate_series(0, (:jobs - 1) / 1000) b
\gexec
