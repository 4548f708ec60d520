"""The full-size travel world: datasets/travel/tools.py run with WORLD_SIZE = "full", its answers made as
long as a real booking API's, and four tools that carry a path one step further.

ComplexFuncBench's samples are hard because its responses are long (a hotel search answers with dozens
of properties, each with descriptions, facilities, policies and reviews), because argument values are
long (booking tokens that encode every leg), and because paths are deep. This module keeps the compact
world's rules and ids (everything a compact answer holds is in the full one, at the same place) and:

- sets WORLD_SIZE = "full" before running the compact module: whole result lists, 12 hotels a district;
- adds to each entry of a result the details a booking site shows (description, facilities, policies,
  guest reviews, fare conditions, rental terms), all derived from a hash of the entry's id, so every
  answer is still a pure function of the arguments;
- adds four tools: Get_Flight_Fare_Rules (reads the long `booking_token` of Get_Flight_Details),
  Get_Room_Booking_Conditions (a rate's `block_id` from Get_Room_List), Get_Car_Rental_Details (a
  car's `search_key` from Search_Car_Rentals) and Get_Attraction_Availability (a product's slug and a
  day).
Every token is checked (a checksum): a hand-made or truncated token is a ValueError, as in the compact world.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Callable

_COMPACT = Path(__file__).resolve().parent.parent / "travel" / "tools.py"
_spec = importlib.util.spec_from_file_location("travel_world_full", _COMPACT)
assert _spec is not None and _spec.loader is not None
world: Any = importlib.util.module_from_spec(_spec)
world.WORLD_SIZE = "full"
sys.modules[_spec.name] = world  # dataclasses look their module up while the module runs
_spec.loader.exec_module(world)

REVIEWS_PER_HOTEL = 12
REVIEWS_PER_PRODUCT = 44

# Words a guest review or a description is put together from (a hash picks them).
_OPENERS = ("We stayed here for", "Spent", "Booked this place for", "Our family chose this hotel for",
            "Came here on a business trip for", "Celebrated an anniversary here over")
_PRAISE = ("the staff were friendly and quick to help with restaurant bookings",
           "the room was spotless and much larger than the photos suggested",
           "breakfast had a wide choice of fresh pastries, fruit and hot dishes",
           "the location made it easy to walk to the main sights and the metro",
           "the beds were comfortable and the blackout curtains worked perfectly",
           "check-in was fast even though we arrived well after midnight")
_CRITIQUE = ("the walls were a little thin and we could hear the corridor at night",
             "the lifts were slow during the morning rush",
             "wifi dropped a few times in the evenings",
             "the bathroom could do with a refresh", "parking nearby was expensive",
             "the air conditioning was noisy on the first night")
_FARE_BRANDS = (  # brand, price difference in the offer's currency, what it adds
    ("Light", 0.0, "Personal item only. No changes; no refund. Seat assigned at check-in. Miles earned at 25 %."),
    ("Standard", 35.0, "Cabin bag of 8 kg and one checked bag of 23 kg. Changes for a fee plus any fare difference; "
                       "no refund. Standard seat selection included. Miles earned at 50 %."),
    ("Flex", 90.0, "Cabin bag of 8 kg and two checked bags of 23 kg. Free changes up to departure; full refund up to "
                   "24 hours before departure. Any seat including extra legroom. Priority boarding. Miles at 100 %."),
)
_CABIN = ("Power outlet at every seat", "Streaming entertainment to your own device", "Complimentary soft drinks",
          "Hot meal service on flights over three hours", "Adjustable headrests", "Extra legroom rows 12 to 14",
          "Quiet zone in the first rows", "Baby bassinets on request", "Wi-Fi messaging free of charge")
_TRAVELLERS = ("Couple", "Family with young children", "Solo traveller", "Group of friends", "Business traveller")
_COUNTRIES = ("Australia", "United Kingdom", "France", "United States", "Japan", "Italy", "Spain", "Germany",
              "Singapore", "Canada", "Netherlands", "Brazil")
_FACILITIES = ("Free WiFi in all areas", "24-hour front desk", "Daily housekeeping", "Luggage storage",
               "Express check-in and check-out", "Laundry service", "Concierge", "Tour desk", "Currency exchange",
               "Lift", "Heating", "Air conditioning", "Soundproof rooms", "Family rooms", "Non-smoking throughout",
               "Safety deposit box", "Ironing service", "Meeting and banquet facilities", "Wake-up service",
               "Fax and photocopying", "Baggage storage", "Private check-in", "Bicycle rental", "Car hire desk")


def _digest(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def _pick(options: tuple[str, ...], *parts: object) -> str:
    return options[_digest(*parts) % len(options)]


def _reviews(key: object, count: int) -> list[dict[str, Any]]:
    reviews = []
    for n in range(count):
        score = 5 + _digest("score", key, n) % 6
        reviews.append({
            "review_id": f"R{_digest('review', key, n) % 10**10:010d}",
            "score": float(score),
            "traveller_type": _pick(_TRAVELLERS, "type", key, n),
            "country": _pick(_COUNTRIES, "country", key, n),
            "title": "Would come back" if score >= 8 else "Good value" if score >= 6 else "Mixed feelings",
            "pros": f"{_pick(_OPENERS, 'open', key, n)} {2 + _digest('nights', key, n) % 6} nights: "
                    f"{_pick(_PRAISE, 'p1', key, n)}, and {_pick(_PRAISE, 'p2', key, n + 1)}.",
            "cons": f"Only downside: {_pick(_CRITIQUE, 'c', key, n)}.",
        })
    return reviews


def _hotel_details(entry: dict[str, Any]) -> dict[str, Any]:
    key = entry["hotel_id"]
    facilities = sorted(_FACILITIES, key=lambda facility: _digest(key, facility))[:10 + _digest("nf", key) % 8]
    return {
        "description": (f"{entry['name']} is a {entry['class']}-star property in {entry['district']}, "
                        f"{entry['city_name']}. Guests rate it {entry['review_score']} ({entry['review_score_word']}) "
                        f"from {entry['review_count']} reviews. {_pick(_PRAISE, 'd1', key).capitalize()}; "
                        f"{_pick(_PRAISE, 'd2', key)}. Rooms come with a flat-screen TV, a kettle and a private "
                        "bathroom with a shower, free toiletries and a hairdryer."),
        "facilities": facilities,
        "policies": {"checkin_from": f"{14 + _digest('in', key) % 3}:00", "checkout_until": f"{10 + _digest('out', key) % 2}:00",
                     "pets": "Pets are not allowed." if _digest("pets", key) % 2 else "Pets are allowed on request.",
                     "children": "Children of all ages are welcome; cots are free for children under 3.",
                     "payment": "Visa, Mastercard and American Express are accepted; the property may pre-authorise "
                                "your card before arrival."},
        "guest_reviews": _reviews(key, REVIEWS_PER_HOTEL),
    }


def _with_hotel_details(response: dict[str, Any]) -> dict[str, Any]:
    for entry in response["data"]["hotels"]:
        entry.update(_hotel_details(entry))
    return response


def _fare_conditions(offer: dict[str, Any]) -> dict[str, Any]:
    key = offer["token"]
    return {
        "fareBasis": [f"{segment['carrier']['code']}{_digest('fare', key, n) % 10**6:06d}"
                      for n, segment in enumerate(offer["segments"])],
        "baggagePolicy": "One personal item under the seat is included for every traveller; cabin bags and "
                         "checked bags depend on the fare (see Get_Flight_Details).",
        "changePolicy": "Changes are allowed up to 24 hours before departure; a fare difference may apply. "
                        "No-shows forfeit the remaining segments of the booking.",
        "seatSelection": "Standard seats can be selected for a fee at booking; exit rows are assigned at check-in.",
        "fareOptions": [{"brand": brand, "priceDifference": round(extra * (1 + _digest("brand", key, brand) % 5 / 10), 2),
                         "includes": includes}
                        for brand, extra, includes in _FARE_BRANDS],
        "travellerPrices": [{"travellerReference": str(n + 1), "travellerType": "ADULT",
                             "price": offer["price"]["perAdult"], "currency": offer["price"]["currency"]}
                            for n in range(round(offer["price"]["total"] / max(offer["price"]["perAdult"], 0.01)))],
        "legs": [_leg_details(segment, key, n) for n, segment in enumerate(offer["segments"])],
        "pointOfSale": "booking.example", "bookerInfoRequired": ["firstName", "lastName", "email", "phone"],
        "amenities": sorted(("Wi-Fi on board", "USB power", "In-seat screen", "Meal included", "Snacks for sale",
                             "Extra legroom rows"), key=lambda amenity: _digest(key, amenity))[:3 + _digest("am", key) % 3],
    }


def _leg_details(segment: dict[str, Any], key: str, n: int) -> dict[str, Any]:
    """What a booking site shows of one flight: terminals, the plane, on-time record, the cabin, the bags."""
    carrier = segment["carrier"]
    return {
        "flightNumber": segment["flightNumber"],
        "departureTerminal": f"T{1 + _digest('dt', key, n) % 5}", "arrivalTerminal": f"T{1 + _digest('at', key, n) % 5}",
        "carriersData": [{"code": carrier["code"], "name": carrier["name"],
                          "logo": f"https://images.example/airlines/{carrier['code'].lower()}/logo_160x160.png"}],
        "operatingCarrier": carrier["name"], "marketingCarrier": carrier["name"],
        "onTimePerformance": f"{70 + _digest('otp', key, n) % 28} % of flights on time over the last 3 months",
        "seatPitch": f"{29 + _digest('pitch', key, n) % 6} in", "seatWidth": f"{17 + _digest('width', key, n) % 2} in",
        "seatMap": [{"row": row, "seats": "".join("ABCDEF"[i] if _digest("seat", key, n, row, i) % 3 else "x"
                                                  for i in range(6))} for row in range(10, 34)],
        "cabinFeatures": [f"{_pick(_CABIN, 'cabin', key, n, i)}" for i in range(4)],
        "baggage": {"personalItem": "1 x 40 x 30 x 15 cm", "cabin": "1 x 55 x 40 x 20 cm, 8 kg",
                    "checked": "Depends on the fare option: see fareOptions", "sportsEquipment": "On request, for a fee"},
        "co2Emissions": {"kg": 80 + _digest("co2", key, n) % 600, "comparedToTypical": f"{-20 + _digest('cmp', key, n) % 40} %"},
    }


def _with_offer_details(response: dict[str, Any]) -> dict[str, Any]:
    for offer in response["data"]["flightOffers"]:
        offer.update(_fare_conditions(offer))
    return response


def _sealed(kind: str, payload: dict[str, Any]) -> str:
    """A token standing for `payload`: base64 of its JSON and a checksum, as real booking APIs issue."""
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    body = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return f"{kind}_{body}_{_digest(kind, text) % 16**6:06x}"


def _unsealed(kind: str, name: str, token: Any, source: str) -> dict[str, Any]:
    text = world._text(name, token)
    unknown = ValueError(f"{name} {text[:60]!r}... is not a {name} from {source}")
    prefix, _, rest = text.partition("_")
    body, _, check = rest.rpartition("_")
    if prefix != kind or not body:
        raise unknown
    try:
        payload_text = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
        payload = json.loads(payload_text)
    except (ValueError, UnicodeDecodeError):
        raise unknown from None
    if not isinstance(payload, dict) or f"{_digest(kind, payload_text) % 16**6:06x}" != check:
        raise unknown
    return payload


def Get_Flight_Details(token: str) -> dict[str, Any]:
    """Full details of one flight offer, and the booking token that Get_Flight_Fare_Rules reads."""
    response = world.Get_Flight_Details(token)
    data = response["data"]
    data["booking_token"] = _sealed("FBT", {
        "offer": data["token"],
        "legs": [{"flight": s["flightNumber"], "from": s["departureAirport"]["code"], "to": s["arrivalAirport"]["code"],
                  "departure": s["departureTime"], "arrival": s["arrivalTime"], "aircraft": s["aircraft"]}
                 for s in data["segments"]],
        "cabin": data["cabinClass"], "adults": data["adults"], "price": data["price"],
    })
    return response


def Get_Flight_Fare_Rules(booking_token: str) -> dict[str, Any]:
    """The fare rules of a booked itinerary, per leg, from the booking_token of Get_Flight_Details."""
    payload = _unsealed("FBT", "booking_token", booking_token, "Get_Flight_Details")
    itinerary = world.Itinerary.from_token(payload.get("offer"))  # the offer must still exist
    rules = []
    for leg in payload["legs"]:
        key = (booking_token, leg["flight"])
        rules.append({
            "flight": leg["flight"], "route": f"{leg['from']}-{leg['to']}",
            "refundable": itinerary.cabin in ("BUSINESS", "FIRST"),
            "cancellation": ("Full refund up to 24 hours before departure." if itinerary.cabin in ("BUSINESS", "FIRST")
                             else "Non-refundable; taxes are refunded on request."),
            "changeFee": world._money((0.0 if itinerary.cabin in ("BUSINESS", "FIRST") else 75.0) * itinerary.adults,
                                      itinerary.currency),
            "minimumConnection": f"{45 + _digest('mct', *key) % 4 * 15} minutes",
            "ticketingDeadline": leg["departure"][:10],
        })
    return world._ok({"cabinClass": itinerary.cabin, "adults": itinerary.adults, "rules": rules,
                      "price": payload["price"]})


def Get_Room_List(hotel_id: int, arrival_date: str, departure_date: str, adults: int = 1, room_qty: int = 1,
                  currency_code: str = "USD") -> dict[str, Any]:
    """The rooms of one hotel for a stay, each rate with the block_id Get_Room_Booking_Conditions reads."""
    response = world.Get_Room_List(hotel_id, arrival_date, departure_date, adults, room_qty, currency_code)
    data = response["data"]
    for room in data["rooms"]:
        room["description"] = (f"{room['name']} of {room['size_m2']} m2 with {room['bed']}, a work desk, a minibar "
                               "and a private bathroom; towels and linen are included.")
        for rate in room["rates"]:
            rate["block_id"] = _sealed("BLK", {"hotel_id": data["hotel_id"], "rate_id": rate["rate_id"],
                                               "arrival": data["arrival_date"], "departure": data["departure_date"],
                                               "room_qty": data["room_qty"], "adults": adults,
                                               "currency": data["currency"], "total": rate["price_total"]})
    return response


def Get_Room_Booking_Conditions(block_id: str) -> dict[str, Any]:
    """Cancellation, prepayment and what is included for one rate, from a block_id of Get_Room_List."""
    payload = _unsealed("BLK", "block_id", block_id, "Get_Room_List")
    hotel = world._hotel(payload["hotel_id"])
    refundable = payload["rate_id"].endswith("-2")
    return world._ok({
        "hotel_id": hotel.hotel_id, "hotel_name": hotel.place.name, "rate_id": payload["rate_id"],
        "arrival_date": payload["arrival"], "departure_date": payload["departure"],
        "refundable": refundable,
        "cancellation": ("Free cancellation until 2 days before arrival." if refundable
                         else "Non-refundable: the whole stay is charged at booking."),
        "prepayment": "No prepayment needed." if refundable else "Full prepayment at booking.",
        "breakfast_included": refundable,
        "price_total": payload["total"], "currency": payload["currency"],
    })


def Search_Car_Rentals(pick_up_latitude: float, pick_up_longitude: float, drop_off_latitude: float,
                       drop_off_longitude: float, pick_up_date: str, drop_off_date: str, pick_up_time: str,
                       drop_off_time: str, driver_age: int = 30, currency_code: str = "USD") -> dict[str, Any]:
    """Rental cars between a pick-up and a drop-off, each with the search_key Get_Car_Rental_Details reads."""
    response = world.Search_Car_Rentals(pick_up_latitude, pick_up_longitude, drop_off_latitude, drop_off_longitude,
                                        pick_up_date, drop_off_date, pick_up_time, drop_off_time, driver_age,
                                        currency_code)
    data = response["data"]
    for result in data["search_results"]:
        result["search_key"] = _sealed("CAR", {
            "vehicle_id": result["vehicle_id"], "vehicle": result["vehicle_info"]["name"],
            "supplier": result["supplier_info"]["name"], "pick_up": data["route_info"]["pick_up"],
            "drop_off": data["route_info"]["drop_off"], "days": data["rental_days"], "driver_age": driver_age,
            "price": result["pricing_info"]})
        result["rental_terms"] = ("Unlimited mileage. Third-party liability and collision damage waiver with an "
                                  f"excess of {world._money(800 + _digest('excess', result['vehicle_id']) % 8 * 100, result['pricing_info']['currency'])} "
                                  f"{result['pricing_info']['currency']}. Fuel policy: full to full. A credit card in "
                                  "the main driver's name is needed at pick-up.")
    return response


def Get_Car_Rental_Details(search_key: str) -> dict[str, Any]:
    """Everything about one rental offer (insurance, deposit, desk hours) from its search_key."""
    payload = _unsealed("CAR", "search_key", search_key, "Search_Car_Rentals")
    deposit = 200 + _digest("deposit", payload["vehicle_id"]) % 6 * 50
    return world._ok({
        "vehicle_id": payload["vehicle_id"], "vehicle": payload["vehicle"], "supplier": payload["supplier"],
        "rental_days": payload["days"], "pick_up": payload["pick_up"], "drop_off": payload["drop_off"],
        "price": payload["price"],
        "deposit": {"currency": payload["price"]["currency"], "amount": world._money(deposit, payload["price"]["currency"])},
        "included": ["Collision damage waiver", "Theft protection", "Third-party liability", "Unlimited mileage"],
        "extras": [{"name": "Child seat", "per_day": world._money(9, payload["price"]["currency"])},
                   {"name": "Additional driver", "per_day": world._money(12, payload["price"]["currency"])}],
    })


def _with_product_details(products: list[dict[str, Any]]) -> None:
    for product in products:
        product["reviews"]["latest"] = _reviews(product["slug"], REVIEWS_PER_PRODUCT)
        product["highlights"] = [f"{_pick(_PRAISE, 'h', product['slug'], n).capitalize()}." for n in range(3)]


def Search_Attractions(id: str, sortBy: str = "trending", currency_code: str = "USD") -> dict[str, Any]:
    """Attraction products of a destination id from Search_Attraction_Location, with their latest reviews."""
    response = world.Search_Attractions(id, sortBy, currency_code)
    _with_product_details(response["data"]["products"])
    return response


def Get_Attraction_Details(slug: str, currency_code: str = "USD") -> dict[str, Any]:
    """Full details of one attraction product from its slug, with its latest reviews."""
    response = world.Get_Attraction_Details(slug, currency_code)
    _with_product_details([response["data"]])
    return response


def Get_Attraction_Availability(slug: str, date: str, currency_code: str = "USD") -> dict[str, Any]:
    """Start times and places left for one attraction product on a day."""
    details = world.Get_Attraction_Details(slug, currency_code)["data"]
    day = world._date("date", date)
    slots = []
    for hour in range(9, 18, 2):
        left = _digest("left", slug, day, hour) % 25
        slots.append({"start": f"{day.isoformat()}T{hour:02d}:00:00", "places_left": left, "available": left > 0,
                      "price": details["price"]})
    return world._ok({"slug": details["slug"], "name": details["name"], "date": day.isoformat(), "timeslots": slots})


def _enriched(function: Callable[..., dict[str, Any]], enrich: Callable[[dict[str, Any]], dict[str, Any]]):
    def tool(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return enrich(function(*args, **kwargs))
    tool.__name__, tool.__doc__ = function.__name__, function.__doc__
    return tool


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    **world.TOOLS,
    "Search_Flights": _enriched(world.Search_Flights, _with_offer_details),
    "Get_Flight_Details": Get_Flight_Details,
    "Get_Flight_Fare_Rules": Get_Flight_Fare_Rules,
    "Search_Hotels": _enriched(world.Search_Hotels, _with_hotel_details),
    "Search_Hotels_By_Coordinates": _enriched(world.Search_Hotels_By_Coordinates, _with_hotel_details),
    "Get_Room_List": Get_Room_List,
    "Get_Room_Booking_Conditions": Get_Room_Booking_Conditions,
    "Search_Car_Rentals": Search_Car_Rentals,
    "Get_Car_Rental_Details": Get_Car_Rental_Details,
    "Search_Attractions": Search_Attractions,
    "Get_Attraction_Details": Get_Attraction_Details,
    "Get_Attraction_Availability": Get_Attraction_Availability,
}
