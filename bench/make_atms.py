#!/usr/bin/env python3
"""Writes an OBIE ATM 2.3 file of N ATMs (default 100,000) in two brands, spread over
Mexico, deterministic for a given N. Usage: make_atms.py N > atms.json"""
import json
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
rng = random.Random(n)
services = ["CashWithdrawal", "Balance", "PINChange", "MiniStatement", "CashDeposits", "MobilePhoneTopUp", "BillPayments"]
access = ["WheelchairAccess", "AudioCashMachine", "LevelAccess"]
brands = {"Banco GCB": [], "GCB Express": []}
for i in range(n):
    brand = "Banco GCB" if i % 3 else "GCB Express"
    brands[brand].append({
        "Identification": f"BENCH-{i:07d}",
        "SupportedLanguages": ["es", "en"],
        "ATMServices": rng.sample(services, rng.randint(2, len(services))),
        "Accessibility": rng.sample(access, rng.randint(0, len(access))),
        "Access24HoursIndicator": rng.random() < 0.6,
        "SupportedCurrencies": ["MXN"],
        "MinimumPossibleAmount": "100.00",
        "Location": {
            "LocationCategory": ["BranchExternal"],
            "PostalAddress": {
                "StreetName": "Avenida Juárez",
                "BuildingNumber": str(rng.randint(1, 2000)),
                "TownName": "Ciudad de México",
                "CountrySubDivision": ["CDMX"],
                "Country": "MX",
                "PostCode": f"{rng.randint(1000, 99999):05d}",
                "GeoLocation": {"GeographicCoordinates": {
                    "Latitude": f"{rng.uniform(15.0, 32.0):.6f}",
                    "Longitude": f"{rng.uniform(-117.0, -87.0):.6f}",
                }},
            },
        },
    })
data = [{"Brand": [{"BrandName": name, "ATM": atms} for name, atms in brands.items()]}]
json.dump({"meta": {"TotalResults": n}, "data": data}, sys.stdout, ensure_ascii=False)
