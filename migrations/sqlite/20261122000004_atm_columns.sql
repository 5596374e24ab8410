-- What listings filter and sort on, kept beside each record when it is imported, so
-- that loading the set parses no JSON and validates nothing a second time. The bits are
-- AtmService::bit and Accessibility::bit (crates/domain/src/atm.rs): fixed per code,
-- a test there says so.
ALTER TABLE atms ADD COLUMN services INTEGER NOT NULL DEFAULT 0;
ALTER TABLE atms ADD COLUMN accessibility INTEGER NOT NULL DEFAULT 0;
ALTER TABLE atms ADD COLUMN latitude REAL;   -- degrees, with longitude or neither
ALTER TABLE atms ADD COLUMN longitude REAL;

-- ATMs imported before this migration: the same values, read once from their records.
UPDATE atms SET
    services = (
        SELECT COALESCE(SUM(DISTINCT CASE value
            WHEN 'Balance' THEN 1
            WHEN 'BillPayments' THEN 2
            WHEN 'CashDeposits' THEN 4
            WHEN 'CharityDonation' THEN 8
            WHEN 'ChequeDeposits' THEN 16
            WHEN 'CashWithdrawal' THEN 32
            WHEN 'EnvelopeDeposit' THEN 64
            WHEN 'FastCash' THEN 128
            WHEN 'MobileBankingRegistration' THEN 256
            WHEN 'MobilePaymentRegistration' THEN 512
            WHEN 'MobilePhoneTopUp' THEN 1024
            WHEN 'OrderStatement' THEN 2048
            WHEN 'Other' THEN 4096
            WHEN 'PINActivation' THEN 8192
            WHEN 'PINChange' THEN 16384
            WHEN 'PINUnblock' THEN 32768
            WHEN 'MiniStatement' THEN 65536
            ELSE 0 END), 0)
        FROM json_each(atms.record, '$.ATMServices')
    ),
    accessibility = (
        SELECT COALESCE(SUM(DISTINCT CASE value
            WHEN 'AudioCashMachine' THEN 1
            WHEN 'AutomaticDoors' THEN 2
            WHEN 'ExternalRamp' THEN 4
            WHEN 'InductionLoop' THEN 8
            WHEN 'InternalRamp' THEN 16
            WHEN 'LevelAccess' THEN 32
            WHEN 'LowerLevelCounter' THEN 64
            WHEN 'Other' THEN 128
            WHEN 'WheelchairAccess' THEN 256
            ELSE 0 END), 0)
        FROM json_each(atms.record, '$.Accessibility')
    ),
    latitude = CAST(json_extract(record, '$.Location.PostalAddress.GeoLocation.GeographicCoordinates.Latitude') AS REAL),
    longitude = CAST(json_extract(record, '$.Location.PostalAddress.GeoLocation.GeographicCoordinates.Longitude') AS REAL);
