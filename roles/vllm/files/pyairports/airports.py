"""pyairports.airports for outlines 0.0.43-0.0.46 (vLLM 0.5.x), made by the vllm role.

outlines imports `AIRPORT_LIST` from here and keeps the IATA code of each row
(index 3) for its `outlines.types.airports.IATA` enum. The only `pyairports`
on PyPI (0.0.1) installs no such module, so this package stands in, with real
data: the rows are built from `airportsdata` (MIT, pinned in the constraints
file) in the original pyairports row order: name, city, country (ISO 3166-1
alpha-2 here), IATA, ICAO, latitude, longitude, elevation (ft), timezone.
"""
import airportsdata

AIRPORT_LIST = [
    [airport["name"], airport["city"], airport["country"], iata, airport["icao"],
     str(airport["lat"]), str(airport["lon"]), str(airport["elevation"]), airport["tz"]]
    for iata, airport in sorted(airportsdata.load("IATA").items())
]
