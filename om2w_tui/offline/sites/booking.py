"""The booking site (Seaside Inn): rooms and rates, a booking form, and a confirmation with a deterministic reference."""

from __future__ import annotations

import hashlib
from datetime import date
from html import escape

from om2w_tui.offline.sites.common import SiteHandler, load_data, money, options


def booking_reference(checkin: str, checkout: str, room: str, guests: int, name: str, breakfast: bool) -> str:
    """A deterministic reference: the same booking details always give the same reference."""
    canonical = "|".join([checkin, checkout, room, str(guests), " ".join(name.lower().split()), "B" if breakfast else "-"])
    return "SEA-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:6].upper()


def _parse_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def quote_booking(checkin: str, checkout: str, room: str, guests: int, breakfast: bool) -> tuple[int, float] | str:
    """(nights, total) for valid details, else the error message shown to the guest."""
    rooms = {r["code"]: r for r in load_data("booking.json")["rooms"]}
    start, end = _parse_date(checkin), _parse_date(checkout)
    if start is None or end is None:
        return "Please enter both dates as YYYY-MM-DD."
    nights = (end - start).days
    if nights <= 0:
        return "The check-out date must be after the check-in date."
    if nights > 30:
        return "Stays are limited to 30 nights."
    if room not in rooms:
        return "Please choose a room type."
    if guests < 1 or guests > rooms[room]["max_guests"]:
        return f'The {rooms[room]["title"]} sleeps at most {rooms[room]["max_guests"]} guests.'
    total = nights * rooms[room]["rate"]
    if breakfast:
        total += nights * guests * load_data("booking.json")["breakfast_per_guest_night"]
    return nights, total


class BookingHandler(SiteHandler):
    NAME = "booking"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/rooms", "route_rooms"),
        ("GET", r"/book", "route_book"),
    ]

    def header(self) -> str:
        return (
            '<header class="site"><a id="home-link" class="brand" href="/">Seaside Inn</a></header>'
            '<nav class="main" aria-label="Main"><a id="nav-book" href="/">Book a stay</a>'
            '<a id="nav-rooms" href="/rooms">Rooms &amp; rates</a></nav>'
        )

    def footer(self) -> str:
        return '<footer class="site">Seaside Inn, 3 Quay Street, Port Ellery. Reception open 24 hours.</footer>'

    def booking_form(self, values: dict[str, str], error: str = "") -> str:
        rooms = [("", "Choose a room"), *((r["code"], r["title"]) for r in load_data("booking.json")["rooms"])]
        guests = [(str(n), f'{n} guest{"s" if n > 1 else ""}') for n in range(1, 5)]
        checked = " checked" if values.get("breakfast") == "yes" else ""
        error_html = f'<p class="error" id="booking-error" role="alert">{escape(error)}</p>' if error else ""
        price = money(load_data("booking.json")["breakfast_per_guest_night"])
        return (
            f'<h2>Book a stay</h2>{error_html}<form id="booking-form" class="stacked" action="/book" method="get">'
            f'<label for="checkin">Check-in date</label><input id="checkin" name="checkin" type="date" min="2025-01-01" max="2026-12-31" value="{escape(values.get("checkin", ""))}">'
            f'<label for="checkout">Check-out date</label><input id="checkout" name="checkout" type="date" min="2025-01-01" max="2026-12-31" value="{escape(values.get("checkout", ""))}">'
            f'<label for="room">Room type</label><select id="room" name="room">{options(rooms, values.get("room", ""))}</select>'
            f'<label for="guests">Guests</label><select id="guests" name="guests">{options(guests, values.get("guests", "1"))}</select>'
            f'<label for="guest-name">Full name</label><input id="guest-name" name="guest_name" type="text" placeholder="Name on the booking" value="{escape(values.get("guest_name", ""))}">'
            f'<label><input id="breakfast" name="breakfast" type="checkbox" value="yes"{checked}> Add breakfast ({price} per guest per night)</label>'
            '<p><button id="book-button" type="submit">Book now</button></p></form>'
        )

    def route_home(self) -> None:
        data = load_data("booking.json")
        self.html(
            "Seaside Inn - Book a stay",
            f'<h1>Seaside Inn</h1><p>{escape(data["tagline"])} See <a id="rooms-link" href="/rooms">rooms and rates</a>.</p>'
            + self.booking_form({}),
        )

    def route_rooms(self) -> None:
        data = load_data("booking.json")
        rows = "".join(
            f'<tr id="room-{r["code"]}"><td>{escape(r["title"])}</td><td>{money(r["rate"])} per night</td>'
            f'<td>Up to {r["max_guests"]} guests</td><td>{escape(r["description"])}</td></tr>'
            for r in data["rooms"]
        )
        self.html(
            "Rooms & rates - Seaside Inn",
            '<h1>Rooms &amp; rates</h1><table id="rates"><tr><th>Room</th><th>Rate</th><th>Guests</th><th>Description</th></tr>'
            f'{rows}</table><p>Breakfast costs {money(data["breakfast_per_guest_night"])} per guest per night.</p>'
            '<p><a id="book-from-rooms" href="/">Book a stay</a></p>',
        )

    def route_book(self) -> None:
        values = dict(self.query)
        name = " ".join(values.get("guest_name", "").split())
        guests = int(values["guests"]) if values.get("guests", "").isdigit() else 0
        breakfast = values.get("breakfast") == "yes"
        checkin, checkout, room = values.get("checkin", ""), values.get("checkout", ""), values.get("room", "")
        outcome = quote_booking(checkin, checkout, room, guests, breakfast) if name else "Please enter the name on the booking."
        if isinstance(outcome, str):
            self.html("Book a stay - Seaside Inn", "<h1>Seaside Inn</h1>" + self.booking_form(values, outcome), 400)
            return
        nights, total = outcome
        reference = booking_reference(checkin, checkout, room, guests, name, breakfast)
        room_title = {r["code"]: r["title"] for r in load_data("booking.json")["rooms"]}[room]
        details = [
            ("Booking reference", reference),
            ("Guest", name),
            ("Room", room_title),
            ("Guests", str(guests)),
            ("Check-in", checkin),
            ("Check-out", checkout),
            ("Nights", str(nights)),
            ("Breakfast", "Included" if breakfast else "Not included"),
            ("Total price", money(total)),
        ]
        rows = "".join(f'<tr><th scope="row">{escape(k)}</th><td>{escape(v)}</td></tr>' for k, v in details)
        self.html(
            f"Booking {reference} - Seaside Inn",
            f'<h1>Booking confirmed</h1><p id="confirmation">Thank you, {escape(name)}. Your booking reference is {reference}.</p>'
            f'<table id="booking-details">{rows}</table><p><a id="book-another" href="/">Make another booking</a></p>',
        )
