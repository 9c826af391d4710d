"""A believable demo district for development (``manage.py seed_demo``); never for production."""

from __future__ import annotations

import random
from datetime import date, timedelta
from decimal import Decimal

FIRST_NAMES = ["José", "María", "Juan", "Carmen", "Luis", "Ana", "Carlos", "Rosa", "Miguel", "Luz", "Pedro",
               "Ramón", "Gladys", "Héctor", "Nilda", "Ángel", "Iris", "Rafael", "Wanda", "Edwin", "Migdalia",
               "Félix", "Yolanda", "Orlando", "Brenda", "Efraín", "Zoraida", "Wilfredo", "Noemí", "Ismael"]
SURNAMES = ["Rivera", "Santiago", "Rodríguez", "Vélez", "Irizarry", "Pagán", "Torres", "Quiñones", "Ortiz",
            "Acosta", "Martínez", "Ramírez", "Lugo", "Seda", "Toro", "Cruz", "Colón", "Negrón", "Padilla",
            "Almodóvar", "Montalvo", "Pabón", "Figueroa", "Mercado", "Nazario", "Bonilla", "Ramos", "Cintrón"]
FARMS = ["Finca", "Hacienda", "Agrícola", "Vaquería", "Cooperativa Agrícola"]
PLACES = ["Palmarejo", "Candelaria", "Llanos", "Maguayo", "Costa", "Santa Rosa", "Guanajibo", "Sabana Yeguas",
          "Parguera", "La Plata", "Betances", "Boquerón"]
TOWNS = ["Lajas", "Cabo Rojo", "Guánica", "Yauco", "San Germán", "Sabana Grande"]
PUBLIC_OWNERS = ["Autoridad de Tierras de Puerto Rico", "Departamento de Agricultura",
                 "Estación Experimental Agrícola (UPR)", "Municipio de Lajas"]
HEADER = "parcel_id,owner_id,owner_name,owner_email,owner_kind,owner_address,gravity_acres,pumped_acres,inclusion,water_since,credit_percent\n"


def demo_csv(*, parcels: int = 1500, seed: int = 1953) -> tuple[str, str]:
    """The demo registry as import CSV, and the owner key of the demo landowner (two parcels)."""
    rng = random.Random(seed)
    lines = [HEADER]
    owners: list[tuple[str, str, str, str, str]] = []
    for index, name in enumerate(PUBLIC_OWNERS, start=1):
        owners.append((f"PUB-{index:03d}", name, "", "public", f"Apartado {1000 + index}, San Juan, PR 00936"))
    owner_count = int(parcels * 0.62)
    for index in range(1, owner_count + 1):
        if rng.random() < 0.15:
            name = f"{rng.choice(FARMS)} {rng.choice(PLACES)} {rng.choice(['Inc.', 'LLC', 'Corp.'])}"
        else:
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)} {rng.choice(SURNAMES)}"
        email = f"dueno{index}@example.pr" if rng.random() < 0.4 else ""
        town = rng.choice(TOWNS)
        owners.append((f"DEMO-{index:05d}", name, email, "private", f"HC {rng.randint(1, 9)} Box {rng.randint(1000, 9999)}, {town}, PR 00667"))
    landowner = ("DEMO-LANDOWNER", "Carmen Irizarry Vélez", "carmen.irizarry@example.pr", "private", "HC 2 Box 7123, Lajas, PR 00667")

    def row(parcel_id: str, owner: tuple, gravity: Decimal, pumped: Decimal, inclusion: str, water: str, credit: Decimal) -> str:
        key, name, email, kind, address = owner
        return f'{parcel_id},{key},"{name}",{email},{kind},"{address}",{gravity},{pumped},{inclusion},{water},{credit}\n'

    lines.append(row("LAJ-000001", landowner, Decimal("42.5000"), Decimal("0.0000"), "permanent", "2001-03-15", Decimal("25.00")))
    lines.append(row("LAJ-000002", landowner, Decimal("18.2500"), Decimal("12.0000"), "permanent", "2010-08-01", Decimal("0.00")))
    for number in range(3, parcels + 1):
        owner = owners[rng.randrange(len(owners))] if rng.random() < 0.985 else owners[rng.randrange(len(PUBLIC_OWNERS))]
        kind = rng.random()
        size = Decimal(rng.randint(20000, 2500000)) / Decimal(10000)
        if kind < 0.7:
            gravity, pumped = size, Decimal("0.0000")
        elif kind < 0.9:
            gravity, pumped = Decimal("0.0000"), size
        else:
            gravity, pumped = size, (size / 3).quantize(Decimal("0.0001"))
        draw = rng.random()
        inclusion = "permanent" if draw < 0.9 else ("trial" if draw < 0.96 else "excluded")
        water_draw = rng.random()
        if water_draw < 0.8:
            water = date(1956, 1, 1) + timedelta(days=rng.randint(0, 365 * 68))
        elif water_draw < 0.95:
            water = date(2025, 1, 1) + timedelta(days=rng.randint(0, 600))  # recent: may not pay yet
        else:
            water = None
        credit = Decimal(rng.choice([10, 15, 20, 25, 33.33, 50])).quantize(Decimal("0.01")) if rng.random() < 0.06 else Decimal("0.00")
        lines.append(row(f"LAJ-{number:06d}", owner, gravity.quantize(Decimal("0.0001")), pumped.quantize(Decimal("0.0001")),
                         inclusion, water.isoformat() if water else "", credit))
    return "".join(lines), landowner[0]
