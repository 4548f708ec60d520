"""Executable tools of the bundled travel world (flights, hotels, car rental, attractions, taxi).

A small, deterministic world written for fcbench in the spirit of ComplexFuncBench's Booking.com
APIs (its own design, not a copy): ten cities with their real airports, districts and landmarks
(real coordinates), and everything else -- hotels, flight schedules, prices, car fleets, tours --
derived from a hash of what identifies it (route and date, hotel and night...). So:

- every tool is a pure function of its arguments: no randomness, no wall clock, no network, no
  files; the same call gives the same response in any worker, on any day;
- outputs feed later inputs (airport/city ids, flight tokens, dest ids, coordinates, product
  slugs, place ids): that is what makes nested gold paths;
- search tools return several candidates (a city and its airports, a district and its landmarks),
  so picking the right one is part of the task;
- invalid input (unknown id, malformed date, return before departure...) raises ValueError with a
  message saying what is wrong; the python environment reports it as a `tool_error`.

Simplifications, on purpose: fixed UTC offsets (no daylight saving), direct flights only, fixed
exchange rates. Every response is `{"status": true, "message": "Success", "data": ...}`.
The functions exposed as tools are listed in `TOOLS` (the environment loads that mapping); the
underscore helpers are not tools.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

# ------------------------------------------------------------------------------------------ constants
CURRENCY_PER_USD: dict[str, float] = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "AUD": 1.52, "JPY": 150.0, "SGD": 1.34}
CABIN_PRICE_FACTOR: dict[str, float] = {"ECONOMY": 1.0, "PREMIUM_ECONOMY": 1.7, "BUSINESS": 3.4, "FIRST": 5.8}
FLIGHT_SORTS = ("BEST", "CHEAPEST", "FASTEST")
HOTEL_SORTS = ("popularity", "price", "review_score", "distance", "class_descending")
HOTEL_SEARCH_TYPES = ("CITY", "DISTRICT", "LANDMARK", "HOTEL")
ATTRACTION_SORTS = ("trending", "attr_book_score", "lowest_price")

# The full-size world (datasets/travel-full/tools.py) runs this module with WORLD_SIZE = "full" set
# in its namespace first: the same rules, six times the hotels and whole result lists (ComplexFuncBench's
# responses are long: finding the right entry in them is part of the task).
FULL_WORLD = globals().get("WORLD_SIZE") == "full"

# Lists are cut to a few candidates: responses stay a few KB, as a model's context needs (compact world).
MAX_LOCATIONS = 5
MAX_FLIGHT_OFFERS = 80 if FULL_WORLD else 5
# the full world lists every hotel that matches (48 at most), so a pick over the list ("the cheapest")
# is over every match: a model need not sort or page to find it
MAX_HOTELS = 100 if FULL_WORLD else 5
MAX_CARS = 8 if FULL_WORLD else 5
MAX_PRODUCTS = 5
MAX_DESTINATIONS = 3
HOTELS_PER_DISTRICT = 12 if FULL_WORLD else 2

LANDMARK_HOTEL_RADIUS_KM = 5.0  # a LANDMARK hotel search covers this radius around the landmark
RENTAL_DESK_REACH_KM = 25.0  # a car pick-up/drop-off point must be this close to a rental desk
TAXI_MAX_KM = 150.0  # a taxi ride stays within one metropolitan area
MAX_NIGHTS = 30
MAX_RENTAL_DAYS = 60
MIN_DRIVER_AGE, YOUNG_DRIVER_AGE, MAX_DRIVER_AGE = 21, 25, 99

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


# ---------------------------------------------------------------------------------------- the world
@dataclass(frozen=True)
class Airport:
    code: str
    name: str
    latitude: float
    longitude: float
    region: str = ""  # only when it differs from the city's (Newark is in New Jersey)


@dataclass(frozen=True)
class City:
    code: str  # IATA metropolitan code
    name: str
    region: str
    country: str
    country_code: str
    utc_offset: int  # hours, fixed all year
    latitude: float
    longitude: float
    cost_index: float  # scales hotel, car, taxi and tour prices
    aliases: tuple[str, ...]
    carriers: tuple[str, ...]  # airline codes based in the country
    airports: tuple[Airport, ...]
    districts: tuple[tuple[str, float, float], ...]  # name, latitude, longitude
    landmarks: tuple[tuple[str, str, float, float], ...]  # name, category, latitude, longitude


CITIES: tuple[City, ...] = (
    City("SYD", "Sydney", "New South Wales", "Australia", "AU", 10, -33.8688, 151.2093, 1.2, (), ("QF", "VA", "JQ"),
         (Airport("SYD", "Sydney Kingsford Smith Airport", -33.9399, 151.1753),),
         (("The Rocks", -33.8599, 151.2090), ("Darling Harbour", -33.8748, 151.2002),
          ("Bondi Beach", -33.8915, 151.2767), ("Surry Hills", -33.8861, 151.2111)),
         (("Sydney Opera House", "performing-arts", -33.8568, 151.2153),
          ("Sydney Harbour Bridge", "bridge", -33.8523, 151.2108),
          ("Royal Botanic Garden Sydney", "garden", -33.8642, 151.2166),
          ("Taronga Zoo", "zoo", -33.8435, 151.2413))),
    City("MEL", "Melbourne", "Victoria", "Australia", "AU", 10, -37.8136, 144.9631, 1.1, (), ("QF", "VA", "JQ"),
         (Airport("MEL", "Melbourne Airport", -37.6690, 144.8410),
          Airport("AVV", "Avalon Airport", -38.0394, 144.4694)),
         (("Melbourne CBD", -37.8142, 144.9632), ("Southbank", -37.8226, 144.9650),
          ("St Kilda", -37.8676, 144.9809), ("Fitzroy", -37.7982, 144.9784)),
         (("Royal Botanic Gardens Victoria", "garden", -37.8304, 144.9796),
          ("Federation Square", "square", -37.8180, 144.9691),
          ("Melbourne Cricket Ground", "stadium", -37.8200, 144.9834),
          ("Queen Victoria Market", "market", -37.8076, 144.9568))),
    City("LON", "London", "England", "United Kingdom", "GB", 0, 51.5074, -0.1278, 1.45, ("UK",), ("BA", "U2"),
         (Airport("LHR", "London Heathrow Airport", 51.4700, -0.4543),
          Airport("LGW", "London Gatwick Airport", 51.1537, -0.1821),
          Airport("LCY", "London City Airport", 51.5048, 0.0495),
          Airport("STN", "London Stansted Airport", 51.8860, 0.2389)),
         (("Westminster", 51.4975, -0.1357), ("Covent Garden", 51.5117, -0.1240),
          ("Kensington", 51.4990, -0.1938), ("Shoreditch", 51.5265, -0.0800)),
         (("British Museum", "museum", 51.5194, -0.1270), ("Tower of London", "monument", 51.5081, -0.0759),
          ("London Eye", "viewpoint", 51.5033, -0.1196), ("Hyde Park", "park", 51.5073, -0.1657))),
    City("PAR", "Paris", "Ile-de-France", "France", "FR", 1, 48.8566, 2.3522, 1.4, (), ("AF",),
         (Airport("CDG", "Paris Charles de Gaulle Airport", 49.0097, 2.5479),
          Airport("ORY", "Paris Orly Airport", 48.7262, 2.3652)),
         (("Le Marais", 48.8590, 2.3620), ("Montmartre", 48.8867, 2.3431),
          ("Saint-Germain-des-Pres", 48.8539, 2.3338), ("Champs-Elysees", 48.8698, 2.3078)),
         (("Eiffel Tower", "viewpoint", 48.8584, 2.2945), ("Louvre Museum", "museum", 48.8606, 2.3376),
          ("Notre-Dame Cathedral", "religious", 48.8530, 2.3499),
          ("Arc de Triomphe", "monument", 48.8738, 2.2950))),
    City("NYC", "New York", "New York", "United States", "US", -5, 40.7128, -74.0060, 1.6, ("NYC", "New York City"),
         ("AA", "DL", "UA"),
         (Airport("JFK", "John F. Kennedy International Airport", 40.6413, -73.7781),
          Airport("LGA", "LaGuardia Airport", 40.7769, -73.8740),
          Airport("EWR", "Newark Liberty International Airport", 40.6895, -74.1745, "New Jersey")),
         (("Midtown Manhattan", 40.7549, -73.9840), ("SoHo", 40.7233, -74.0030),
          ("Williamsburg", 40.7081, -73.9571), ("Upper West Side", 40.7870, -73.9754)),
         (("Central Park", "park", 40.7829, -73.9654), ("Empire State Building", "viewpoint", 40.7484, -73.9857),
          ("Statue of Liberty", "monument", 40.6892, -74.0445),
          ("Metropolitan Museum of Art", "museum", 40.7794, -73.9632))),
    City("TYO", "Tokyo", "Tokyo", "Japan", "JP", 9, 35.6762, 139.6503, 1.1, (), ("NH", "JL"),
         (Airport("HND", "Tokyo Haneda Airport", 35.5494, 139.7798),
          Airport("NRT", "Narita International Airport", 35.7720, 140.3929)),
         (("Shinjuku", 35.6938, 139.7034), ("Shibuya", 35.6580, 139.7016),
          ("Ginza", 35.6717, 139.7650), ("Asakusa", 35.7119, 139.7983)),
         (("Tokyo Skytree", "viewpoint", 35.7101, 139.8107), ("Senso-ji Temple", "religious", 35.7148, 139.7967),
          ("Meiji Jingu Shrine", "religious", 35.6764, 139.6993), ("Tokyo Tower", "viewpoint", 35.6586, 139.7454))),
    City("ROM", "Rome", "Lazio", "Italy", "IT", 1, 41.9028, 12.4964, 1.05, ("Roma",), ("AZ",),
         (Airport("FCO", "Rome Fiumicino Leonardo da Vinci Airport", 41.8003, 12.2389),
          Airport("CIA", "Rome Ciampino Airport", 41.7994, 12.5949)),
         (("Trastevere", 41.8897, 12.4697), ("Centro Storico", 41.8992, 12.4731),
          ("Monti", 41.8955, 12.4923), ("Prati", 41.9073, 12.4627)),
         (("Colosseum", "monument", 41.8902, 12.4922), ("Vatican Museums", "museum", 41.9065, 12.4536),
          ("Trevi Fountain", "monument", 41.9009, 12.4833), ("Pantheon", "religious", 41.8986, 12.4769))),
    City("BCN", "Barcelona", "Catalonia", "Spain", "ES", 1, 41.3874, 2.1686, 1.0, (), ("IB", "VY"),
         (Airport("BCN", "Barcelona El Prat Airport", 41.2974, 2.0833),
          Airport("GRO", "Girona Costa Brava Airport", 41.9010, 2.7606)),
         (("Gothic Quarter", 41.3833, 2.1777), ("Eixample", 41.3888, 2.1590),
          ("Gracia", 41.4036, 2.1565), ("Barceloneta", 41.3806, 2.1894)),
         (("Sagrada Familia", "religious", 41.4036, 2.1744), ("Park Guell", "park", 41.4145, 2.1527),
          ("Casa Batllo", "museum", 41.3916, 2.1649), ("Picasso Museum", "museum", 41.3852, 2.1810))),
    City("BER", "Berlin", "Berlin", "Germany", "DE", 1, 52.5200, 13.4050, 0.9, (), ("LH", "EW"),
         (Airport("BER", "Berlin Brandenburg Airport", 52.3667, 13.5033),),
         (("Mitte", 52.5200, 13.4000), ("Kreuzberg", 52.4986, 13.4030),
          ("Prenzlauer Berg", 52.5380, 13.4246), ("Charlottenburg", 52.5163, 13.3041)),
         (("Brandenburg Gate", "monument", 52.5163, 13.3777), ("Museum Island", "museum", 52.5169, 13.4019),
          ("East Side Gallery", "monument", 52.5050, 13.4397), ("Reichstag Building", "viewpoint", 52.5186, 13.3762))),
    City("SIN", "Singapore", "Singapore", "Singapore", "SG", 8, 1.2903, 103.8520, 1.35, (), ("SQ", "TR"),
         (Airport("SIN", "Singapore Changi Airport", 1.3644, 103.9915),),
         (("Marina Bay", 1.2830, 103.8607), ("Orchard", 1.3048, 103.8318),
          ("Chinatown", 1.2838, 103.8441), ("Sentosa", 1.2494, 103.8303)),
         (("Gardens by the Bay", "garden", 1.2816, 103.8636), ("Merlion Park", "monument", 1.2868, 103.8545),
          ("Singapore Botanic Gardens", "garden", 1.3138, 103.8159),
          ("Sentosa Universal Studios", "theme-park", 1.2540, 103.8238))),
)

CARRIERS: dict[str, str] = {
    "QF": "Qantas", "VA": "Virgin Australia", "JQ": "Jetstar", "BA": "British Airways", "U2": "easyJet",
    "AF": "Air France", "AA": "American Airlines", "DL": "Delta Air Lines", "UA": "United Airlines",
    "NH": "ANA", "JL": "Japan Airlines", "AZ": "ITA Airways", "IB": "Iberia", "VY": "Vueling",
    "LH": "Lufthansa", "EW": "Eurowings", "SQ": "Singapore Airlines", "TR": "Scoot",
}
LOW_COST_CARRIERS = frozenset({"JQ", "U2", "VY", "EW", "TR"})
LOW_COST_MAX_KM = 4000.0

HOTEL_NAME_ENDINGS = ("Grand Hotel", "Suites", "Boutique Hotel", "Residences", "Inn", "Park Hotel", "Plaza", "Lodge")
HOTEL_NAME_SECOND = ("Annex", "Gardens", "Central", "Riverside")  # the full world's ninth hotel of a district on
HOTEL_AMENITIES = ("Free WiFi", "Breakfast", "Fitness centre", "Swimming pool", "Spa", "Airport shuttle",
                   "Parking", "Restaurant", "Bar", "Family rooms", "Non-smoking rooms", "24-hour front desk")
ROOM_TYPES = (  # name, maximum occupancy, bed, size in m2, price factor
    ("Standard Double Room", 2, "1 double bed", 18, 1.0),
    ("Deluxe King Room", 2, "1 king bed", 26, 1.35),
    ("Family Suite", 4, "1 king bed and 2 single beds", 42, 1.9),
)
ROOM_RATES = (  # name, refundable, breakfast included, price factor
    ("Non-refundable", False, False, 0.9),
    ("Flexible with breakfast", True, True, 1.12),
)
CAR_FLEET = (  # model, group, seats, doors, transmission, large bags, base USD per day
    ("Fiat 500 or similar", "Mini", 4, 3, "Manual", 1, 28.0),
    ("Toyota Yaris or similar", "Small", 4, 5, "Manual", 1, 32.0),
    ("Volkswagen Golf or similar", "Medium", 5, 5, "Manual", 2, 41.0),
    ("Toyota Corolla or similar", "Medium", 5, 4, "Automatic", 2, 45.0),
    ("Mazda CX-5 or similar", "SUV", 5, 5, "Automatic", 3, 62.0),
    ("Toyota RAV4 Hybrid or similar", "SUV", 5, 5, "Automatic", 3, 66.0),
    ("BMW 3 Series or similar", "Premium", 5, 4, "Automatic", 3, 88.0),
    ("Kia Carnival or similar", "People carrier", 8, 5, "Automatic", 4, 95.0),
)
CAR_SUPPLIERS = (("CityDrive Rentals", 8.4, 1.0), ("AeroCars", 7.9, 0.92), ("Metro Hire", 8.8, 1.08),
                 ("Pacific Rent", 8.1, 0.97), ("EuroMotion", 8.6, 1.04))
TAXI_VEHICLES = (  # type, description, passengers, bags, base USD, USD per km
    ("Standard", "Toyota Camry or similar", 3, 2, 4.0, 1.9),
    ("Executive", "Mercedes-Benz E-Class or similar", 3, 2, 8.0, 3.2),
    ("People carrier", "Toyota Sienna or similar", 6, 4, 7.0, 2.6),
    ("Large people carrier", "Mercedes-Benz Vito or similar", 8, 6, 10.0, 3.0),
)
TAXI_SUPPLIERS = ("Harbour Cabs", "Blue Line Transfers", "Swift Chauffeurs", "Metro Taxi Co")
ATTRACTION_KINDS: dict[str, tuple[str, int, float, str]] = {  # title pattern, minutes, base USD, blurb
    "performing-arts": ("{name} guided backstage tour", 60, 32.0, "Go behind the scenes of a world-famous stage."),
    "bridge": ("{name} climb experience", 180, 190.0, "Climb to the top with a guide and take in the views."),
    "garden": ("{name} guided walking tour", 90, 18.0, "Stroll through the gardens with a local guide."),
    "zoo": ("{name} day pass", 360, 35.0, "A full day among animals from around the world."),
    "square": ("{name} and laneways walking tour", 120, 25.0, "Discover the city's squares and hidden lanes."),
    "stadium": ("{name} behind-the-scenes tour", 75, 28.0, "Visit the changing rooms, the field and the museum."),
    "market": ("{name} food tasting tour", 120, 45.0, "Taste local produce with the stallholders."),
    "museum": ("{name} skip-the-line entry ticket", 150, 24.0, "Skip the queue and explore the collections."),
    "monument": ("{name} admission ticket", 90, 22.0, "Entry to one of the city's best-known sights."),
    "viewpoint": ("{name} observation deck ticket", 60, 30.0, "Panoramic views over the whole city."),
    "park": ("{name} bike tour", 150, 38.0, "Ride through the park's highlights with a guide."),
    "religious": ("{name} guided visit", 90, 20.0, "The history and art of a landmark place of worship."),
    "theme-park": ("{name} one-day ticket", 480, 75.0, "Rides, shows and attractions for the whole day."),
}
CITY_TOUR = ("{name} highlights small-group day tour", 420, 85.0, "The city's must-see sights in one day.")


# -------------------------------------------------------------------------------------- pure helpers
def _digest(*parts: object) -> int:
    """A stable 64-bit number for what identifies a thing: the source of every 'random' value."""
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _unit(*parts: object) -> float:
    """A stable number in [0, 1) for what identifies a thing."""
    return _digest(*parts) / 2.0**64


def _distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle (haversine) distance."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    d_phi, d_lambda = phi2 - phi1, math.radians(lon2 - lon1)
    a = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(a))


def _normalise(text: str) -> str:
    """Lowercase ASCII words: 'Saint-Germain-des-Prés' and 'saint germain des pres' compare equal."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", ascii_text.lower()).split())


def _slug(text: str) -> str:
    return _normalise(text).replace(" ", "-")


def _money(usd: float, currency: str) -> float:
    amount = usd * CURRENCY_PER_USD[currency]
    return float(round(amount)) if currency == "JPY" else round(amount, 2)


def _ok(data: Any) -> dict[str, Any]:
    return {"status": True, "message": "Success", "data": data}


# ------------------------------------------------------------------------------------- input checks
def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def _date(name: str, value: Any) -> date:
    if not isinstance(value, str) or not _DATE.match(value):
        raise ValueError(f"{name} must be a date written YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} is not a calendar date: {value!r}") from None


def _time(name: str, value: Any) -> tuple[int, int]:
    match = _TIME.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{name} must be a time written HH:MM (24-hour), got {value!r}")
    return int(match.group(1)), int(match.group(2))


def _integer(name: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def _number(name: str, value: Any, low: float, high: float) -> float:
    if type(value) not in (int, float) or not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _currency(value: Any) -> str:
    return _choice("currency_code", value, CURRENCY_PER_USD)


def _stay_nights(arrival_date: Any, departure_date: Any) -> list[date]:
    arrival = _date("arrival_date", arrival_date)
    departure = _date("departure_date", departure_date)
    if departure <= arrival:
        raise ValueError(f"departure_date {departure_date} must be after arrival_date {arrival_date}")
    nights = (departure - arrival).days
    if nights > MAX_NIGHTS:
        raise ValueError(f"a stay is at most {MAX_NIGHTS} nights, got {nights}")
    return [arrival + timedelta(days=n) for n in range(nights)]


def _party(adults: Any, room_qty: Any) -> tuple[int, int]:
    adults = _integer("adults", adults, 1, 30)
    room_qty = _integer("room_qty", room_qty, 1, 10)
    if adults > 4 * room_qty:
        raise ValueError(f"{room_qty} room(s) sleep at most {4 * room_qty} adults, got {adults}")
    return adults, room_qty


# ------------------------------------------------------------------------------------------- places
@dataclass(frozen=True)
class Place:
    """Anything a location tool can find: a city, airport, district, landmark or hotel."""

    key: str  # unique and stable: where hashes and ids come from
    kind: str  # city | airport | district | landmark | hotel
    name: str
    city: City
    latitude: float
    longitude: float
    code: str = ""  # IATA code of a city or airport
    region: str = ""
    aliases: tuple[str, ...] = ()
    category: str = ""  # of a landmark

    @property
    def own_words(self) -> frozenset[str]:
        return frozenset(" ".join(_normalise(text) for text in (self.name, self.code, *self.aliases)).split())

    @property
    def words(self) -> frozenset[str]:
        context = (self.city.name, self.region or self.city.region, self.city.country)
        return self.own_words | frozenset(" ".join(_normalise(text) for text in context).split())

    @property
    def label(self) -> str:
        parts = [self.name] if self.kind == "city" else [self.name, self.city.name]
        return ", ".join(dict.fromkeys([*parts, self.region or self.city.region, self.city.country]))


@dataclass(frozen=True)
class Hotel:
    hotel_id: int
    place: Place
    district: str
    stars: int
    review_score: float
    review_count: int
    base_usd: float  # a standard room on a weeknight
    amenities: tuple[str, ...]


def _city_places(city: City) -> list[Place]:
    places = [Place(city.code, "city", city.name, city, city.latitude, city.longitude, city.code,
                    aliases=city.aliases)]
    places += [Place(f"{city.code}/airport/{a.code}", "airport", a.name, city, a.latitude, a.longitude, a.code,
                     a.region) for a in city.airports]
    places += [Place(f"{city.code}/district/{_slug(name)}", "district", name, city, lat, lon)
               for name, lat, lon in city.districts]
    places += [Place(f"{city.code}/landmark/{_slug(name)}", "landmark", name, city, lat, lon, category=category)
               for name, category, lat, lon in city.landmarks]
    return places


def _district_hotels(city: City, district: str, latitude: float, longitude: float) -> list[Hotel]:
    """HOTELS_PER_DISTRICT hotels per district, every attribute derived from the district's name."""
    first_ending = _digest("hotel-name", city.code, district) % len(HOTEL_NAME_ENDINGS)
    hotels = []
    for n in range(HOTELS_PER_DISTRICT):
        ending = HOTEL_NAME_ENDINGS[(first_ending + 3 * n) % len(HOTEL_NAME_ENDINGS)]
        name = f"{district} {ending}" + ("" if n < len(HOTEL_NAME_ENDINGS) else f" {HOTEL_NAME_SECOND[n % 4]}")
        key = f"{city.code}/hotel/{_slug(name)}"
        place = Place(key, "hotel", name, city,
                      round(latitude + (_unit(key, "lat") - 0.5) * 0.012, 6),
                      round(longitude + (_unit(key, "lon") - 0.5) * 0.012, 6))
        stars = 2 + _digest(key, "stars") % 4
        amenity_order = sorted(HOTEL_AMENITIES, key=lambda amenity: _digest(key, amenity))
        hotels.append(Hotel(
            hotel_id=1_000_000 + _digest(key, "id") % 9_000_000,
            place=place,
            district=district,
            stars=stars,
            review_score=round(6.8 + 2.9 * _unit(key, "review"), 1),
            review_count=150 + _digest(key, "reviews") % 4000,
            base_usd=round(city.cost_index * (45 + 35 * stars) * (0.85 + 0.4 * _unit(key, "price")), 2),
            amenities=tuple(sorted(amenity_order[: 3 + stars // 2])),
        ))
    return hotels


def _build_world() -> tuple[list[Place], dict[int, Hotel]]:
    places: list[Place] = []
    hotels: dict[int, Hotel] = {}
    for city in CITIES:
        places += _city_places(city)
        for district, lat, lon in city.districts:
            for hotel in _district_hotels(city, district, lat, lon):
                if hotel.hotel_id in hotels:  # checked once at import: ids come from a hash
                    raise RuntimeError(f"hotel id clash: {hotel.place.name}")
                hotels[hotel.hotel_id] = hotel
                places.append(hotel.place)
    return places, hotels


PLACES, HOTELS = _build_world()
PLACE_BY_KEY: dict[str, Place] = {place.key: place for place in PLACES}
HOTEL_BY_KEY: dict[str, Hotel] = {hotel.place.key: hotel for hotel in HOTELS.values()}
CITY_BY_CODE: dict[str, City] = {city.code: city for city in CITIES}
AIRPORT_PLACE: dict[str, Place] = {place.code: place for place in PLACES if place.kind == "airport"}


# Computed once: a search compares the query with every place.
PLACE_NAMES: dict[str, frozenset[str]] = {
    place.key: frozenset(_normalise(text) for text in (place.name, place.code, *place.aliases) if text)
    for place in PLACES
}
PLACE_OWN_WORDS: dict[str, frozenset[str]] = {place.key: place.own_words for place in PLACES}
PLACE_WORDS: dict[str, frozenset[str]] = {place.key: place.words for place in PLACES}


def _query_words(query: Any) -> list[str]:
    words = _normalise(_text("query", query)).split()
    if not words:
        raise ValueError(f"query has no letters or digits: {query!r}")
    return words


def _all_words_in(words: list[str], vocabulary: frozenset[str]) -> bool:
    """Every query word is a word of the vocabulary, or the start of one ('Melb', 'Heath')."""
    return all(
        word in vocabulary or (len(word) >= 3 and any(known.startswith(word) for known in vocabulary))
        for word in words
    )


def _search(query: Any, kinds: tuple[str, ...], limit: int = MAX_LOCATIONS) -> list[Place]:
    """Places of the given kinds matching every word of the query, best first: exact names, then
    names holding every word (rather than matching through their city or country), then by kind
    in the order given, then world order."""
    words = _query_words(query)
    exact = " ".join(words)
    ranked = []
    for order, place in enumerate(PLACES):
        if place.kind in kinds and _all_words_in(words, PLACE_WORDS[place.key]):
            in_own_name = _all_words_in(words, PLACE_OWN_WORDS[place.key])
            ranked.append((exact not in PLACE_NAMES[place.key], not in_own_name, kinds.index(place.kind), order, place))
    return [entry[-1] for entry in sorted(ranked, key=lambda entry: entry[:4])[:limit]]


def _coordinates(place: Place) -> dict[str, float]:
    return {"latitude": place.latitude, "longitude": place.longitude}


# ------------------------------------------------------------------------------------------ flights
@dataclass(frozen=True)
class Flight:
    carrier: str
    number: str
    origin: Place
    destination: Place
    departure: datetime  # local time at the origin
    arrival: datetime  # local time at the destination
    seconds: int
    economy_usd: float  # one adult, economy
    aircraft: str


def _flight_location_id(place: Place) -> str:
    return f"{place.code}.{'CITY' if place.kind == 'city' else 'AIRPORT'}"


def _airports_of(location_id: Any, name: str) -> list[Place]:
    """The airports a flight search id stands for: one airport, or every airport of a city."""
    text = _text(name, location_id)
    code, _, kind = text.partition(".")
    if kind == "AIRPORT" and code in AIRPORT_PLACE:
        return [AIRPORT_PLACE[code]]
    if kind == "CITY" and code in CITY_BY_CODE:
        return [AIRPORT_PLACE[airport.code] for airport in CITY_BY_CODE[code].airports]
    raise ValueError(f"{name} {text!r} is not a known id: use an id from Search_Flight_Location (e.g. 'SYD.AIRPORT')")


def _scheduled_flights(origin: Place, destination: Place, day: date) -> list[Flight]:
    """The direct flights of a route on a day: 2 to 4, at times and prices derived from the route."""
    route = (origin.code, destination.code, day.isoformat())
    distance = _distance_km(origin.latitude, origin.longitude, destination.latitude, destination.longitude)
    minutes = 5 * round((distance / 820 * 60 + 40) / 5)
    carriers = sorted(set(origin.city.carriers) | set(destination.city.carriers))
    if distance > LOW_COST_MAX_KM:  # budget airlines fly short and medium haul only
        carriers = [carrier for carrier in carriers if carrier not in LOW_COST_CARRIERS]
    flights = []
    for n in range(2 + _digest("flights", *route) % 3):
        departure_minute = 5 * ((6 * 60 + int(_unit("departure", *route, n) * 16 * 60)) // 5)
        departure = datetime.combine(day, datetime.min.time()) + timedelta(minutes=departure_minute)
        offset_hours = destination.city.utc_offset - origin.city.utc_offset
        carrier = carriers[_digest("carrier", *route, n) % len(carriers)]
        fare_factor = 0.75 if carrier in LOW_COST_CARRIERS else 1.0
        flights.append(Flight(
            carrier=carrier,
            number=f"{carrier} {100 + _digest('number', *route, n) % 900}",
            origin=origin,
            destination=destination,
            departure=departure,
            arrival=departure + timedelta(minutes=minutes, hours=offset_hours),
            seconds=minutes * 60,
            economy_usd=round((50 + 0.11 * distance) * fare_factor * (0.85 + 0.5 * _unit("fare", *route, n)), 2),
            aircraft="Airbus A320" if distance < 3000 else ("Boeing 787-9" if n % 2 else "Airbus A350-900"),
        ))
    return sorted(flights, key=lambda flight: flight.departure)


@dataclass(frozen=True)
class Itinerary:
    """What a flight token stands for: the search it came from and the flights it picked."""

    origin: str
    destination: str
    depart: date
    outbound: int
    return_date: date | None
    inbound: int | None
    cabin: str
    adults: int
    currency: str

    def flights(self) -> list[Flight]:
        origin, destination = AIRPORT_PLACE[self.origin], AIRPORT_PLACE[self.destination]
        chosen = [_scheduled_flights(origin, destination, self.depart)[self.outbound]]
        if self.return_date is not None and self.inbound is not None:
            chosen.append(_scheduled_flights(destination, origin, self.return_date)[self.inbound])
        return chosen

    def token(self) -> str:
        fields = [self.origin, self.destination, self.depart.isoformat(), str(self.outbound),
                  self.return_date.isoformat() if self.return_date else "",
                  "" if self.inbound is None else str(self.inbound),
                  self.cabin, str(self.adults), self.currency]
        payload = ",".join(fields)
        body = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
        return f"FOT_{body}_{_digest('token', payload) % 65536:04x}"

    @classmethod
    def from_token(cls, token: Any) -> Itinerary:
        text = _text("token", token)
        unknown = ValueError(f"token {text[:60]!r} is not a flight token from Search_Flights")
        match = re.fullmatch(r"FOT_([A-Za-z0-9_-]+)_([0-9a-f]{4})", text)
        if match is None:
            raise unknown
        try:
            payload = base64.urlsafe_b64decode(match.group(1) + "=" * (-len(match.group(1)) % 4)).decode()
            origin, destination, depart, outbound, return_date, inbound, cabin, adults, currency = payload.split(",")
            itinerary = cls(origin, destination, date.fromisoformat(depart), int(outbound),
                            date.fromisoformat(return_date) if return_date else None,
                            int(inbound) if inbound else None, cabin, int(adults), currency)
            if (itinerary.outbound < 0 or (itinerary.inbound is not None and itinerary.inbound < 0)
                    or itinerary.cabin not in CABIN_PRICE_FACTOR or itinerary.currency not in CURRENCY_PER_USD
                    or not 1 <= itinerary.adults <= 9):
                raise ValueError(payload)
            itinerary.flights()  # the airports and flight indexes must exist
        except (ValueError, KeyError, IndexError, UnicodeDecodeError):
            raise unknown from None
        if itinerary.token() != text:  # checksum: a hand-edited token is not a token
            raise unknown
        return itinerary


def _airport_json(place: Place) -> dict[str, str]:
    return {"code": place.code, "name": place.name, "cityName": place.city.name}


def _segment_json(flight: Flight) -> dict[str, Any]:
    return {
        "departureAirport": _airport_json(flight.origin),
        "arrivalAirport": _airport_json(flight.destination),
        "departureTime": flight.departure.isoformat(),
        "arrivalTime": flight.arrival.isoformat(),
        "totalTime": flight.seconds,
        "flightNumber": flight.number,
        "carrier": {"code": flight.carrier, "name": CARRIERS[flight.carrier]},
    }


def _itinerary_usd(itinerary: Itinerary, flights: list[Flight]) -> float:
    """Price for all adults, in USD."""
    per_adult = sum(flight.economy_usd for flight in flights) * CABIN_PRICE_FACTOR[itinerary.cabin]
    return per_adult * itinerary.adults


def _price_json(total_usd: float, adults: int, currency: str) -> dict[str, Any]:
    return {"currency": currency, "total": _money(total_usd, currency),
            "perAdult": _money(total_usd / adults, currency)}


def _offer_json(itinerary: Itinerary, flights: list[Flight]) -> dict[str, Any]:
    return {
        "token": itinerary.token(),
        "segments": [_segment_json(flight) for flight in flights],
        "cabinClass": itinerary.cabin,
        "price": _price_json(_itinerary_usd(itinerary, flights), itinerary.adults, itinerary.currency),
    }


Offer = tuple[Itinerary, list[Flight]]


def _offer_sort_key(sort: str) -> Callable[[Offer], tuple[float, ...]]:
    def price(offer: Offer) -> float:
        return _itinerary_usd(*offer)

    def duration(offer: Offer) -> float:
        return float(sum(flight.seconds for flight in offer[1]))

    if sort == "CHEAPEST":
        return lambda offer: (price(offer), duration(offer))
    if sort == "FASTEST":
        return lambda offer: (duration(offer), price(offer))
    # BEST: a price-per-hour trade-off, as a traveller would weigh it (one hour worth 40 USD)
    return lambda offer: (price(offer) / offer[0].adults + duration(offer) / 3600 * 40,)


# --------------------------------------------------------------------------------------- hotel data
def _review_word(score: float) -> str:
    for threshold, word in ((9.0, "Superb"), (8.5, "Excellent"), (8.0, "Very good"), (7.0, "Good")):
        if score >= threshold:
            return word
    return "Pleasant"


def _night_usd(hotel: Hotel, night: date) -> float:
    """A standard room's price for one night: Friday and Saturday cost more."""
    weekend = 1.18 if night.weekday() in (4, 5) else 1.0
    return hotel.base_usd * weekend * (0.92 + 0.16 * _unit(hotel.hotel_id, night.isoformat()))


def _stay_usd(hotel: Hotel, nights: list[date], room_qty: int) -> float:
    return sum(_night_usd(hotel, night) for night in nights) * room_qty


def _hotel_json(hotel: Hotel, distance: float, nights: list[date], room_qty: int, currency: str) -> dict[str, Any]:
    total_usd = _stay_usd(hotel, nights, room_qty)
    return {
        "hotel_id": hotel.hotel_id,
        "name": hotel.place.name,
        "district": hotel.district,
        "city_name": hotel.place.city.name,
        "latitude": hotel.place.latitude,
        "longitude": hotel.place.longitude,
        "class": hotel.stars,
        "review_score": hotel.review_score,
        "review_score_word": _review_word(hotel.review_score),
        "review_count": hotel.review_count,
        "distance_km": round(distance, 2),
        "amenities": list(hotel.amenities),
        "checkin_date": nights[0].isoformat(),
        "checkout_date": (nights[-1] + timedelta(days=1)).isoformat(),
        "price": {"currency": currency, "per_night": _money(total_usd / len(nights) / room_qty, currency),
                  "total": _money(total_usd, currency)},
    }


def _hotel_list(candidates: list[tuple[Hotel, float]], nights: list[date], room_qty: int, sort_by: str,
                currency: str, price_max: float | None) -> dict[str, Any]:
    """Filter by nightly budget, sort, cut: the hotel list every hotel search answers with."""
    def per_night(hotel: Hotel) -> float:
        return _money(_stay_usd(hotel, nights, 1) / len(nights), currency)

    if price_max is not None:
        candidates = [(hotel, distance) for hotel, distance in candidates if per_night(hotel) <= price_max]
    sort_keys: dict[str, Callable[[tuple[Hotel, float]], tuple[float, ...]]] = {
        "popularity": lambda entry: (-entry[0].review_count * entry[0].review_score, entry[0].hotel_id),
        "price": lambda entry: (per_night(entry[0]), entry[0].hotel_id),
        "review_score": lambda entry: (-entry[0].review_score, entry[0].hotel_id),
        "distance": lambda entry: (entry[1], entry[0].hotel_id),
        "class_descending": lambda entry: (-entry[0].stars, per_night(entry[0]), entry[0].hotel_id),
    }
    ordered = sorted(candidates, key=sort_keys[sort_by])
    return {
        "total_count": len(ordered),
        "nights": len(nights),
        "currency": currency,
        "hotels": [_hotel_json(hotel, distance, nights, room_qty, currency)
                   for hotel, distance in ordered[:MAX_HOTELS]],
    }


def _hotels_near(latitude: float, longitude: float, radius_km: float) -> list[tuple[Hotel, float]]:
    found = []
    for hotel in HOTELS.values():
        distance = _distance_km(latitude, longitude, hotel.place.latitude, hotel.place.longitude)
        if distance <= radius_km:
            found.append((hotel, distance))
    return found


# --- hotel destination ids: a city is negative (as on Booking.com), anything else positive
def _hotel_dest_id(place: Place) -> str:
    if place.kind == "hotel":
        return str(HOTEL_BY_KEY[place.key].hotel_id)
    city_number = CITIES.index(place.city) + 1
    if place.kind == "city":
        return str(-(2_000_000 + city_number * 1000 + 1))
    kind_digit = {"district": 3, "landmark": 9}[place.kind]
    index = [p.key for p in PLACES if p.city is place.city and p.kind == place.kind].index(place.key)
    return str(kind_digit * 100_000 + city_number * 100 + index + 1)


HOTEL_DESTINATIONS: dict[str, Place] = {
    _hotel_dest_id(place): place for place in PLACES if place.kind in ("city", "district", "landmark", "hotel")
}


def _destination_hotels(place: Place) -> list[tuple[Hotel, float]]:
    if place.kind == "hotel":
        return [(HOTEL_BY_KEY[place.key], 0.0)]
    if place.kind == "landmark":
        return _hotels_near(place.latitude, place.longitude, LANDMARK_HOTEL_RADIUS_KM)
    return [(hotel, _distance_km(place.latitude, place.longitude, hotel.place.latitude, hotel.place.longitude))
            for hotel in HOTELS.values()
            if hotel.place.city is place.city and (place.kind == "city" or hotel.district == place.name)]


def _hotel(hotel_id: Any) -> Hotel:
    if type(hotel_id) is not int or hotel_id not in HOTELS:
        raise ValueError(f"hotel_id {hotel_id!r} is not a known hotel: use a hotel_id from a hotel search")
    return HOTELS[hotel_id]


# ------------------------------------------------------------------------------------- car and taxi
def _rental_desks() -> list[Place]:
    """Cars are picked up and dropped off at a city-centre desk or an airport desk."""
    return [place for place in PLACES if place.kind in ("city", "airport")]


def _nearest_desk(latitude: Any, longitude: Any, which: str) -> tuple[Place, float]:
    latitude = _number(f"{which}_latitude", latitude, -90, 90)
    longitude = _number(f"{which}_longitude", longitude, -180, 180)
    desk, distance = min(((desk, _distance_km(latitude, longitude, desk.latitude, desk.longitude))
                          for desk in _rental_desks()), key=lambda entry: entry[1])
    if distance > RENTAL_DESK_REACH_KM:
        raise ValueError(f"no car rental desk within {RENTAL_DESK_REACH_KM:g} km of the "
                         f"{which.replace('_', '-')} point ({latitude}, {longitude})")
    return desk, distance


def _desk_json(desk: Place, day: date, hour: int, minute: int) -> dict[str, Any]:
    return {"name": desk.name if desk.kind == "airport" else f"{desk.name} city centre", "city": desk.city.name,
            **_coordinates(desk), "date": day.isoformat(), "time": f"{hour:02d}:{minute:02d}"}


def _taxi_place_id(place: Place) -> str:
    digest = hashlib.blake2b(place.key.encode(), digest_size=15).digest()
    return "ChIJ" + base64.urlsafe_b64encode(digest).decode()


TAXI_PLACES: dict[str, Place] = {_taxi_place_id(place): place for place in PLACES}


def _taxi_place(place_id: Any, name: str) -> Place:
    text = _text(name, place_id)
    if text not in TAXI_PLACES:
        raise ValueError(f"{name} {text!r} is not a known place: use a googlePlaceId from Taxi_Search_Location")
    return TAXI_PLACES[text]


# -------------------------------------------------------------------------------------- attractions
@dataclass(frozen=True)
class Product:
    product_id: str
    slug: str
    title: str
    city: City
    place: Place  # where it happens (the landmark, or the city centre for a city tour)
    minutes: int
    base_usd: float
    blurb: str
    review_average: float
    review_count: int
    free_cancellation: bool


def _product(city: City, place: Place, pattern: tuple[str, int, float, str]) -> Product:
    title_pattern, minutes, base_usd, blurb = pattern
    title = title_pattern.format(name=place.name)
    code = base64.b32encode(_digest("product", place.key).to_bytes(8, "big")).decode()[:10].lower()
    return Product(
        product_id=f"PR{code.upper()}",
        slug=f"pr{code}-{_slug(title)}",
        title=title,
        city=city,
        place=place,
        minutes=minutes,
        base_usd=round(base_usd * city.cost_index ** 0.5 * (0.85 + 0.3 * _unit("tour-price", place.key)), 2),
        blurb=blurb,
        review_average=round(4.0 + 0.9 * _unit("tour-review", place.key), 1),
        review_count=40 + _digest("tour-reviews", place.key) % 6000,
        free_cancellation=_digest("tour-cancel", place.key) % 4 != 0,
    )


def _build_products() -> dict[str, Product]:
    products: dict[str, Product] = {}
    for place in PLACES:
        if place.kind == "landmark":
            product = _product(place.city, place, ATTRACTION_KINDS[place.category])
        elif place.kind == "city":
            product = _product(place.city, place, CITY_TOUR)
        else:
            continue
        products[product.slug] = product
    return products


PRODUCTS = _build_products()


def _attraction_dest_id(city: City) -> str:
    """Opaque on purpose (base64 of the city's hotel destination id): a model must copy it."""
    ufi = int(_hotel_dest_id(PLACE_BY_KEY[city.code]))
    return base64.b64encode(json.dumps({"ufi": ufi}, separators=(",", ":")).encode()).decode()


ATTRACTION_DESTINATIONS: dict[str, City] = {_attraction_dest_id(city): city for city in CITIES}


def _product_words(product: Product) -> frozenset[str]:
    texts = (product.title, product.place.name, product.city.name, product.city.country)
    return frozenset(" ".join(_normalise(text) for text in texts).split())


def _product_json(product: Product, currency: str) -> dict[str, Any]:
    return {
        "id": product.product_id,
        "name": product.title,
        "slug": product.slug,
        "shortDescription": product.blurb,
        "cityName": product.city.name,
        "duration_minutes": product.minutes,
        "price": {"currency": currency, "amount": _money(product.base_usd, currency)},
        "reviews": {"average": product.review_average, "count": product.review_count},
    }


# ============================================================================================ tools
def Search_Flight_Location(query: str) -> dict[str, Any]:
    """Cities and airports matching a name or code, each with the id flight searches take."""
    data = []
    for place in _search(query, ("city", "airport")):
        entry: dict[str, Any] = {
            "id": _flight_location_id(place), "type": "CITY" if place.kind == "city" else "AIRPORT",
            "name": place.name, "code": place.code, "city_name": place.city.name,
            "region_name": place.region or place.city.region, "country_name": place.city.country,
        }
        if place.kind == "airport":
            entry["distance_to_city_km"] = round(_distance_km(place.latitude, place.longitude,
                                                              place.city.latitude, place.city.longitude), 1)
        data.append(entry)
    return _ok(data)


def Search_Flights(fromId: str, toId: str, departDate: str, returnDate: str | None = None, adults: int = 1,
                   cabinClass: str = "ECONOMY", sort: str = "BEST", currency_code: str = "USD") -> dict[str, Any]:
    """Flight offers (one way or return) between two flight location ids on given dates."""
    origins, destinations = _airports_of(fromId, "fromId"), _airports_of(toId, "toId")
    if origins[0].city is destinations[0].city:
        raise ValueError(f"fromId {fromId!r} and toId {toId!r} are in the same city")
    depart = _date("departDate", departDate)
    back = None if returnDate in (None, "") else _date("returnDate", returnDate)
    if back is not None and back < depart:
        raise ValueError(f"returnDate {returnDate} is before departDate {departDate}")
    adults = _integer("adults", adults, 1, 9)
    cabin = _choice("cabinClass", cabinClass, CABIN_PRICE_FACTOR)
    sort = _choice("sort", sort, FLIGHT_SORTS)
    currency = _currency(currency_code)
    offers: list[Offer] = []
    for origin in origins:
        for destination in destinations:
            outbound = _scheduled_flights(origin, destination, depart)
            inbound = _scheduled_flights(destination, origin, back) if back is not None else []
            for n, flight in enumerate(outbound):
                # a return offer pairs the n-th flight out with a flight back, deterministically
                back_index = n % len(inbound) if inbound else None
                itinerary = Itinerary(origin.code, destination.code, depart, n, back, back_index, cabin, adults,
                                      currency)
                offers.append((itinerary, [flight] if back_index is None else [flight, inbound[back_index]]))
    offers.sort(key=_offer_sort_key(sort))
    return _ok({
        "aggregation": {"totalCount": len(offers), "shown": min(len(offers), MAX_FLIGHT_OFFERS)},
        "flightOffers": [_offer_json(*offer) for offer in offers[:MAX_FLIGHT_OFFERS]],
    })


def Get_Flight_Details(token: str) -> dict[str, Any]:
    """Full details of one flight offer (segments, aircraft, baggage, fare rules) from its token."""
    itinerary = Itinerary.from_token(token)
    flights = itinerary.flights()
    segments = []
    for flight in flights:
        segment = _segment_json(flight)
        full_service = flight.carrier not in LOW_COST_CARRIERS or itinerary.cabin != "ECONOMY"
        segment.update({
            "aircraft": flight.aircraft,
            "cabinBaggage": "1 x 7 kg" if itinerary.cabin in ("ECONOMY", "PREMIUM_ECONOMY") else "2 x 7 kg",
            "checkedBaggage": ("2 x 32 kg" if itinerary.cabin in ("BUSINESS", "FIRST")
                               else "1 x 23 kg" if full_service else "not included"),
            "seatsLeft": 1 + _digest("seats", itinerary.token(), flight.number) % 9,
        })
        segments.append(segment)
    refundable = itinerary.cabin in ("BUSINESS", "FIRST")
    change_fee_usd = 0.0 if refundable else 75.0 * itinerary.adults
    return _ok({
        "token": itinerary.token(),
        "tripType": "ROUNDTRIP" if itinerary.return_date else "ONEWAY",
        "cabinClass": itinerary.cabin,
        "adults": itinerary.adults,
        "segments": segments,
        "fareRules": {"refundable": refundable, "changeFee": _money(change_fee_usd, itinerary.currency)},
        "price": _price_json(_itinerary_usd(itinerary, flights), itinerary.adults, itinerary.currency),
    })


def Search_Hotel_Destination(query: str) -> dict[str, Any]:
    """Hotel search destinations (city, district, landmark, hotel) matching a query, with dest_id."""
    data = []
    for place in _search(query, ("city", "district", "landmark", "hotel")):
        count = len(_destination_hotels(place))
        data.append({"dest_id": _hotel_dest_id(place), "search_type": place.kind.upper(), "name": place.name,
                     "label": place.label, "city_name": place.city.name, "country": place.city.country,
                     **_coordinates(place), "nr_hotels": count})
    return _ok(data)


def Search_Hotels(dest_id: str, search_type: str, arrival_date: str, departure_date: str, adults: int = 1,
                  room_qty: int = 1, sort_by: str = "popularity", price_max: float | None = None,
                  currency_code: str = "USD") -> dict[str, Any]:
    """Hotels of a destination from Search_Hotel_Destination, with prices for the stay."""
    # Booking-style ids look numeric: a model may well send -2001001 rather than "-2001001".
    text = _text("dest_id", str(dest_id) if type(dest_id) is int else dest_id)
    search_type = _choice("search_type", search_type, HOTEL_SEARCH_TYPES)
    place = HOTEL_DESTINATIONS.get(text)
    if place is None:
        raise ValueError(f"dest_id {text!r} is not known: use a dest_id from Search_Hotel_Destination")
    if place.kind.upper() != search_type:
        raise ValueError(f"dest_id {text} is a {place.kind.upper()} destination, not {search_type}")
    nights = _stay_nights(arrival_date, departure_date)
    _, room_qty = _party(adults, room_qty)
    sort_by = _choice("sort_by", sort_by, HOTEL_SORTS)
    budget = None if price_max is None else _number("price_max", price_max, 1, 1_000_000)
    listing = _hotel_list(_destination_hotels(place), nights, room_qty, sort_by, _currency(currency_code), budget)
    return _ok({"destination": {"dest_id": text, "search_type": search_type, "name": place.name}, **listing})


def Location_to_Lat_Long(query: str) -> dict[str, Any]:
    """Geocode a place name: candidates with name, address, latitude and longitude."""
    data = [{"name": place.name, "type": place.kind, "formatted_address": place.label, **_coordinates(place)}
            for place in _search(query, ("city", "landmark", "district", "airport", "hotel"))]
    return _ok(data)


def Search_Hotels_By_Coordinates(latitude: float, longitude: float, arrival_date: str, departure_date: str,
                                 radius: float = 5, adults: int = 1, room_qty: int = 1, sort_by: str = "distance",
                                 price_max: float | None = None, currency_code: str = "USD") -> dict[str, Any]:
    """Hotels within a radius (km) of a point, with prices for the stay."""
    latitude = _number("latitude", latitude, -90, 90)
    longitude = _number("longitude", longitude, -180, 180)
    radius = _number("radius", radius, 0.1, 50)
    nights = _stay_nights(arrival_date, departure_date)
    _, room_qty = _party(adults, room_qty)
    sort_by = _choice("sort_by", sort_by, HOTEL_SORTS)
    budget = None if price_max is None else _number("price_max", price_max, 1, 1_000_000)
    listing = _hotel_list(_hotels_near(latitude, longitude, radius), nights, room_qty, sort_by,
                          _currency(currency_code), budget)
    return _ok({"search_center": {"latitude": latitude, "longitude": longitude}, "radius_km": radius, **listing})


def Get_Room_List(hotel_id: int, arrival_date: str, departure_date: str, adults: int = 1, room_qty: int = 1,
                  currency_code: str = "USD") -> dict[str, Any]:
    """The rooms of one hotel for a stay, each with its rates."""
    hotel = _hotel(hotel_id)
    nights = _stay_nights(arrival_date, departure_date)
    adults, room_qty = _party(adults, room_qty)
    currency = _currency(currency_code)
    standard_usd = _stay_usd(hotel, nights, room_qty)
    rooms = []
    for number, (room_name, occupancy, bed, size, room_factor) in enumerate(ROOM_TYPES, start=1):
        rates = []
        for rate_name, refundable, breakfast, rate_factor in ROOM_RATES:
            total_usd = standard_usd * room_factor * rate_factor
            rates.append({"rate_id": f"{hotel.hotel_id}-{number}-{len(rates) + 1}", "name": rate_name,
                          "refundable": refundable, "breakfast_included": breakfast,
                          "price_total": _money(total_usd, currency),
                          "price_per_night": _money(total_usd / len(nights) / room_qty, currency)})
        rooms.append({"room_id": f"{hotel.hotel_id}-{number}", "name": room_name, "max_occupancy": occupancy,
                      "fits_party": occupancy * room_qty >= adults, "bed": bed, "size_m2": size, "rates": rates})
    return _ok({"hotel_id": hotel.hotel_id, "hotel_name": hotel.place.name, "arrival_date": nights[0].isoformat(),
                "departure_date": (nights[-1] + timedelta(days=1)).isoformat(), "nights": len(nights),
                "room_qty": room_qty, "currency": currency, "rooms": rooms})


def Search_Car_Location(query: str) -> dict[str, Any]:
    """Places matching a query where a car can be picked up or dropped off, with coordinates."""
    data = [{"name": place.name, "type": place.kind, "city": place.city.name, "country": place.city.country,
             "coordinates": _coordinates(place)}
            for place in _search(query, ("city", "airport", "district", "landmark"))]
    return _ok(data)


def Search_Car_Rentals(pick_up_latitude: float, pick_up_longitude: float, drop_off_latitude: float,
                       drop_off_longitude: float, pick_up_date: str, drop_off_date: str, pick_up_time: str,
                       drop_off_time: str, driver_age: int = 30, currency_code: str = "USD") -> dict[str, Any]:
    """Rental cars available between a pick-up and a drop-off point and time."""
    pick_up_desk, _ = _nearest_desk(pick_up_latitude, pick_up_longitude, "pick_up")
    drop_off_desk, _ = _nearest_desk(drop_off_latitude, drop_off_longitude, "drop_off")
    if pick_up_desk.city.country != drop_off_desk.city.country:
        raise ValueError(f"one-way rentals across borders are not offered ({pick_up_desk.city.country} to "
                         f"{drop_off_desk.city.country})")
    start_day, end_day = _date("pick_up_date", pick_up_date), _date("drop_off_date", drop_off_date)
    start_hour, start_minute = _time("pick_up_time", pick_up_time)
    end_hour, end_minute = _time("drop_off_time", drop_off_time)
    start = datetime.combine(start_day, datetime.min.time()) + timedelta(hours=start_hour, minutes=start_minute)
    end = datetime.combine(end_day, datetime.min.time()) + timedelta(hours=end_hour, minutes=end_minute)
    if end <= start:
        raise ValueError(f"drop-off {drop_off_date} {drop_off_time} must be after pick-up "
                         f"{pick_up_date} {pick_up_time}")
    days = max(1, math.ceil((end - start) / timedelta(days=1)))
    if days > MAX_RENTAL_DAYS:
        raise ValueError(f"a rental is at most {MAX_RENTAL_DAYS} days, got {days}")
    age = _integer("driver_age", driver_age, MIN_DRIVER_AGE, MAX_DRIVER_AGE)
    currency = _currency(currency_code)
    young_fee_usd = 15.0 * days if age < YOUNG_DRIVER_AGE else 0.0
    one_way_fee_usd = 0.0 if pick_up_desk is drop_off_desk else 85.0
    airport_factor = 1.12 if pick_up_desk.kind == "airport" else 1.0
    offered = sorted(range(len(CAR_FLEET)), key=lambda n: _digest("fleet", pick_up_desk.key, start_day, n))[:MAX_CARS]
    results: list[dict[str, Any]] = []
    totals: list[float] = []  # results are listed cheapest first
    for n in offered:
        model, group, seats, doors, transmission, bags, base_usd = CAR_FLEET[n]
        supplier, rating, supplier_factor = CAR_SUPPLIERS[_digest("supplier", pick_up_desk.key, n) % len(CAR_SUPPLIERS)]
        day_usd = (base_usd * pick_up_desk.city.cost_index ** 0.5 * supplier_factor * airport_factor
                   * (0.9 + 0.25 * _unit("car-price", pick_up_desk.key, start_day, n)))
        total_usd = day_usd * days + young_fee_usd + one_way_fee_usd
        results.append({
            "vehicle_id": str(_digest("vehicle", pick_up_desk.key, drop_off_desk.key, start_day, n) % 10**9),
            "vehicle_info": {"name": model, "group": group, "seats": seats, "doors": doors,
                             "transmission": transmission, "large_bags": bags},
            "supplier_info": {"name": supplier, "rating": rating},
            "pricing_info": {"currency": currency, "price": _money(total_usd, currency),
                             "per_day": _money(day_usd, currency),
                             "young_driver_fee": _money(young_fee_usd, currency),
                             "one_way_fee": _money(one_way_fee_usd, currency)},
        })
        totals.append(total_usd)
    results = [result for _, result in sorted(zip(totals, results), key=lambda pair: pair[0])]
    return _ok({
        "rental_days": days,
        "route_info": {"pick_up": _desk_json(pick_up_desk, start_day, start_hour, start_minute),
                       "drop_off": _desk_json(drop_off_desk, end_day, end_hour, end_minute)},
        "search_results": results,
    })


def Search_Attraction_Location(query: str) -> dict[str, Any]:
    """Attraction products and attraction destinations (cities) matching a query."""
    words = _query_words(query)
    products = [product for product in PRODUCTS.values() if _all_words_in(words, _product_words(product))]
    cities = [place.city for place in _search(query, ("city",), MAX_DESTINATIONS)]
    return _ok({
        "products": [{"id": p.product_id, "productSlug": p.slug, "title": p.title, "cityName": p.city.name}
                     for p in products[:MAX_PRODUCTS]],
        "destinations": [{"id": _attraction_dest_id(city), "cityName": city.name, "country": city.country,
                          "productCount": sum(1 for p in PRODUCTS.values() if p.city is city)} for city in cities],
    })


def Search_Attractions(id: str, sortBy: str = "trending", currency_code: str = "USD") -> dict[str, Any]:
    """Attraction products of a destination id from Search_Attraction_Location."""
    text = _text("id", id)
    if text not in ATTRACTION_DESTINATIONS:
        raise ValueError(f"id {text!r} is not an attraction destination: use a destinations id from "
                         "Search_Attraction_Location")
    city = ATTRACTION_DESTINATIONS[text]
    sort = _choice("sortBy", sortBy, ATTRACTION_SORTS)
    currency = _currency(currency_code)
    sort_keys: dict[str, Callable[[Product], tuple[float, str]]] = {
        "trending": lambda p: (-p.review_count, p.slug),
        "attr_book_score": lambda p: (-p.review_average, p.slug),
        "lowest_price": lambda p: (p.base_usd, p.slug),
    }
    products = sorted((p for p in PRODUCTS.values() if p.city is city), key=sort_keys[sort])
    return _ok({"cityName": city.name, "total": len(products),
                "products": [_product_json(p, currency) for p in products[:MAX_PRODUCTS]]})


def Get_Attraction_Details(slug: str, currency_code: str = "USD") -> dict[str, Any]:
    """Full details of one attraction product from its slug: description, place, price, policy."""
    text = _text("slug", slug)
    if text not in PRODUCTS:
        raise ValueError(f"slug {text!r} is not a known attraction: use a productSlug or slug from an "
                         "attraction search")
    product = PRODUCTS[text]
    currency = _currency(currency_code)
    details = _product_json(product, currency)
    details.update({
        "description": f"{product.title} in {product.city.name}. {product.blurb}",
        "address": product.place.label,
        "location": _coordinates(product.place),
        "cancellationPolicy": {"freeCancellation": product.free_cancellation,
                               "hoursBefore": 24 if product.free_cancellation else 0},
        "languages": ["English"] + (["Japanese"] if product.city.code == "TYO" else
                                    ["French"] if product.city.country_code == "FR" else
                                    ["Spanish"] if product.city.country_code == "ES" else []),
    })
    return _ok(details)


def Taxi_Search_Location(query: str) -> dict[str, Any]:
    """Pick-up and drop-off places for a taxi matching a query, with their googlePlaceId."""
    data = [{"googlePlaceId": _taxi_place_id(place), "name": place.name, "type": place.kind,
             "city": place.city.name, "country": place.city.country, **_coordinates(place)}
            for place in _search(query, ("airport", "landmark", "hotel", "district", "city"))]
    return _ok(data)


def Search_Taxi(pick_up_place_id: str, drop_off_place_id: str, pick_up_date: str, pick_up_time: str,
                currency_code: str = "USD") -> dict[str, Any]:
    """Taxi offers (one per vehicle type) between two places from Taxi_Search_Location."""
    start = _taxi_place(pick_up_place_id, "pick_up_place_id")
    end = _taxi_place(drop_off_place_id, "drop_off_place_id")
    if start is end:
        raise ValueError("pick_up_place_id and drop_off_place_id are the same place")
    day = _date("pick_up_date", pick_up_date)
    hour, minute = _time("pick_up_time", pick_up_time)
    currency = _currency(currency_code)
    straight = _distance_km(start.latitude, start.longitude, end.latitude, end.longitude)
    if straight > TAXI_MAX_KM:
        raise ValueError(f"{start.name} and {end.name} are {straight:.0f} km apart: a taxi ride is at most "
                         f"{TAXI_MAX_KM:g} km")
    road_km = max(1.0, straight * 1.3)  # roads are longer than the straight line
    minutes = 5 + round(road_km / 35 * 60)
    night_factor = 1.2 if hour >= 22 or hour < 6 else 1.0
    results = []
    for number, (vehicle, description, passengers, bags, base_usd, per_km_usd) in enumerate(TAXI_VEHICLES, start=1):
        price_usd = (base_usd + per_km_usd * road_km) * start.city.cost_index ** 0.5 * night_factor
        results.append({"resultId": f"{_digest('taxi', start.key, end.key, day, hour, minute) % 10**8:08d}-{number}",
                        "vehicleType": vehicle, "description": description, "passengerCapacity": passengers,
                        "bags": bags, "supplierName": TAXI_SUPPLIERS[_digest('taxi-supplier', start.key, number) % 4],
                        "price": {"currency": currency, "amount": _money(price_usd, currency)}})
    return _ok({
        "journey": {"pickUpLocation": {"name": start.name, "googlePlaceId": _taxi_place_id(start)},
                    "dropOffLocation": {"name": end.name, "googlePlaceId": _taxi_place_id(end)},
                    "requestedPickUpDateTime": f"{day.isoformat()}T{hour:02d}:{minute:02d}:00",
                    "distance_km": round(road_km, 1), "duration_minutes": minutes},
        "results": results,
    })


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    function.__name__: function
    for function in (
        Search_Flight_Location, Search_Flights, Get_Flight_Details,
        Search_Hotel_Destination, Search_Hotels, Location_to_Lat_Long, Search_Hotels_By_Coordinates, Get_Room_List,
        Search_Car_Location, Search_Car_Rentals,
        Search_Attraction_Location, Search_Attractions, Get_Attraction_Details,
        Taxi_Search_Location, Search_Taxi,
    )
}
