"""The five offline websites (shop, wiki, booking, longpage, studio): server-side rendered, deterministic HTML.

Every site also answers `GET /hang` by never replying (the request blocks until the server stops), for
fault tests of page-load timeouts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import date
from functools import cache
from html import escape
from http.cookies import SimpleCookie
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from om2w_tui.offline.serving import QuietHandler

DATA_DIR = Path(str(resources.files(__package__).joinpath("data")))


@cache
def load_data(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def _stylesheet() -> str:
    return (DATA_DIR / "site.css").read_text(encoding="utf-8")


def money(amount: float) -> str:
    return f"${amount:,.2f}"


def _inline_code(text: str) -> str:
    """Escape text and turn `backticks` into <code> spans."""
    parts = escape(text).split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def render_page(title: str, body: str, *, header: str = "", footer: str = "") -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{_stylesheet()}</style>\n</head>\n"
        f'<body>\n{header}\n<main id="content">\n{body}\n</main>\n{footer}\n</body>\n</html>\n'
    ).encode()


def _options(choices: list[tuple[str, str]], selected: str) -> str:
    return "".join(
        f'<option value="{escape(value)}"{" selected" if value == selected else ""}>{escape(label)}</option>'
        for value, label in choices
    )


class SiteHandler(QuietHandler):
    """Routes requests to `route_*` methods declared in ROUTES as (method, path regex, method name)."""

    ROUTES: list[tuple[str, str, str]] = []
    NAME = "site"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        self.query = {key: values[-1] for key, values in parse_qs(split.query, keep_blank_values=True).items()}
        self.form: dict[str, str] = {}
        if method == "POST":
            body = self.read_body().decode("utf-8", "replace")
            self.form = {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}
        if method == "GET" and split.path == "/hang":
            self.wait_until_stopped()
            return
        if method == "GET" and split.path == "/favicon.ico":
            self.send_body(204, b"", "image/x-icon")
            return
        for route_method, pattern, handler_name in self.ROUTES:
            match = re.fullmatch(pattern, split.path)
            if route_method == method and match:
                getattr(self, handler_name)(*match.groups())
                return
        self.not_found()

    def html(self, title: str, body: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        page = render_page(title, body, header=self.header(), footer=self.footer())
        self.send_body(status, page, "text/html; charset=utf-8", headers)

    def redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self.send_body(303, b"", "text/plain", {"Location": location, **(headers or {})})

    def not_found(self) -> None:
        self.html("Page not found", '<h1>Page not found</h1><p>This page does not exist. <a id="not-found-home" href="/">Go to the home page</a>.</p>', 404)

    def header(self) -> str:
        return ""

    def footer(self) -> str:
        return ""


# ----------------------------------------------------------------------------------------------- shop

CART_COOKIE = "nw_cart"
PRICE_LIMITS = [("", "Any price"), ("25", "Under $25"), ("50", "Under $50"), ("100", "Under $100"), ("250", "Under $250")]
SORTS = [("relevance", "Relevance"), ("price_asc", "Price: low to high"), ("price_desc", "Price: high to low"), ("rating", "Customer rating")]


def _products() -> dict[str, dict[str, Any]]:
    return {product["sku"]: product for product in load_data("shop.json")["products"]}


def _category_titles() -> dict[str, str]:
    return {category["slug"]: category["title"] for category in load_data("shop.json")["categories"]}


def search_products(query: str = "", category: str = "", max_price: str = "", sort: str = "relevance") -> list[dict[str, Any]]:
    """Every query word must appear in the product's name, description or category."""
    words = query.lower().split()
    found = []
    for product in _products().values():
        haystack = f'{product["name"]} {product["description"]} {product["category"]}'.lower()
        if not all(word in haystack for word in words):
            continue
        if category and product["category"] != category:
            continue
        if max_price and product["price"] >= float(max_price):
            continue
        found.append(product)
    if sort == "price_asc":
        found.sort(key=lambda p: p["price"])
    elif sort == "price_desc":
        found.sort(key=lambda p: -p["price"])
    elif sort == "rating":
        found.sort(key=lambda p: (-p["rating"], p["price"]))
    return found


def parse_cart(cookie_value: str) -> dict[str, int]:
    """The cart cookie holds `sku:qty` pairs joined by dots; unknown skus are dropped."""
    cart: dict[str, int] = {}
    products = _products()
    for item in cookie_value.split("."):
        sku, _, qty = item.partition(":")
        if sku in products and qty.isdigit() and int(qty) > 0:
            cart[sku] = min(int(qty), 99)
    return cart


def format_cart(cart: dict[str, int]) -> str:
    return ".".join(f"{sku}:{qty}" for sku, qty in cart.items())


class ShopHandler(SiteHandler):
    NAME = "shop"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/search", "route_search"),
        ("GET", r"/category/([a-z-]+)", "route_category"),
        ("GET", r"/product/([a-z-]+)", "route_product"),
        ("GET", r"/cart", "route_cart"),
        ("POST", r"/cart/add", "route_cart_add"),
        ("POST", r"/cart/remove", "route_cart_remove"),
        ("GET", r"/checkout", "route_checkout"),
    ]

    def cart(self) -> dict[str, int]:
        cookie = SimpleCookie(self.headers.get("Cookie") or "")
        return parse_cart(cookie[CART_COOKIE].value) if CART_COOKIE in cookie else {}

    def cart_cookie(self, cart: dict[str, int]) -> dict[str, str]:
        return {"Set-Cookie": f"{CART_COOKIE}={format_cart(cart)}; Path=/; SameSite=Lax"}

    def header(self) -> str:
        count = sum(self.cart().values())
        categories = "".join(
            f'<a id="category-{slug}" href="/category/{slug}">{escape(title)}</a>' for slug, title in _category_titles().items()
        )
        return (
            '<header class="site">'
            f'<a id="home-link" class="brand" href="/">{escape(load_data("shop.json")["name"])}</a>'
            '<form id="search-form" action="/search" method="get" role="search">'
            f'<input id="q" name="q" type="text" placeholder="Search products" aria-label="Search products" value="{escape(self.query.get("q", ""))}">'
            '<button id="search-button" type="submit">Search</button></form>'
            f'<a id="cart-link" href="/cart">Cart ({count})</a></header>'
            f'<nav class="main" aria-label="Categories"><a id="all-products" href="/search">All products</a>{categories}</nav>'
        )

    def footer(self) -> str:
        return '<footer class="site">Northwind Market - free delivery on orders over $75. Prices include VAT.</footer>'

    def product_list(self, products: list[dict[str, Any]]) -> str:
        if not products:
            return '<p id="no-results">No products match your search.</p>'
        items = "".join(
            f'<li class="result" id="result-{p["sku"]}"><a id="product-link-{p["sku"]}" href="/product/{p["sku"]}">{escape(p["name"])}</a>'
            f' - <span class="price">{money(p["price"])}</span> - {p["rating"]} out of 5 stars ({p["reviews"]} reviews)</li>'
            for p in products
        )
        return f'<ul class="results" id="results">{items}</ul>'

    def route_home(self) -> None:
        featured = [_products()[sku] for sku in ("kettle-copper", "lamp-aurora", "headphones-pulse", "tent-ridgeline")]
        self.html(
            "Northwind Market",
            "<h1>Welcome to Northwind Market</h1><p>Kitchen, outdoor, office and audio gear, shipped from our warehouse in Leeds.</p>"
            f"<h2>Featured products</h2>{self.product_list(featured)}"
            '<p><a id="browse-all" href="/search">Browse all products</a></p>',
        )

    def filter_form(self, query: str, category: str, max_price: str, sort: str) -> str:
        categories = [("", "All categories"), *_category_titles().items()]
        return (
            '<form id="filters" action="/search" method="get" aria-label="Filters">'
            f'<input type="hidden" name="q" value="{escape(query)}">'
            f'<label for="category">Category</label> <select id="category" name="category">{_options(categories, category)}</select> '
            f'<label for="max-price">Price</label> <select id="max-price" name="max_price">{_options(PRICE_LIMITS, max_price)}</select> '
            f'<label for="sort">Sort by</label> <select id="sort" name="sort">{_options(SORTS, sort)}</select> '
            '<button id="apply-filters" type="submit">Apply filters</button></form>'
        )

    def route_search(self) -> None:
        query = self.query.get("q", "").strip()
        category = self.query.get("category", "")
        category = category if category in _category_titles() else ""
        max_price = self.query.get("max_price", "")
        max_price = max_price if max_price in dict(PRICE_LIMITS) else ""
        sort = self.query.get("sort", "relevance")
        sort = sort if sort in dict(SORTS) else "relevance"
        products = search_products(query, category, max_price, sort)
        summary = f'Showing {len(products)} result{"s" if len(products) != 1 else ""}'
        if query:
            summary += f' for "{query}"'
        summary += f" in {_category_titles()[category]}" if category else " in all categories"
        if max_price:
            summary += f", {dict(PRICE_LIMITS)[max_price].lower()}"
        summary += f", sorted by {dict(SORTS)[sort].lower()}."
        self.html(
            f'Search: {query or "all products"} - Northwind Market',
            f"<h1>Search results</h1>{self.filter_form(query, category, max_price, sort)}"
            f'<p id="result-summary">{escape(summary)}</p>{self.product_list(products)}',
        )

    def route_category(self, slug: str) -> None:
        titles = _category_titles()
        if slug not in titles:
            self.not_found()
            return
        products = search_products(category=slug)
        self.html(
            f"{titles[slug]} - Northwind Market",
            f"<h1>{escape(titles[slug])}</h1><p>{len(products)} products in {escape(titles[slug])}.</p>{self.product_list(products)}",
        )

    def route_product(self, sku: str) -> None:
        product = _products().get(sku)
        if product is None:
            self.not_found()
            return
        category_title = _category_titles()[product["category"]]
        specs = "".join(f'<tr><th scope="row">{escape(k)}</th><td>{escape(v)}</td></tr>' for k, v in product["specs"].items())
        quantities = _options([(str(n), str(n)) for n in range(1, 6)], "1")
        self.html(
            f'{product["name"]} - Northwind Market',
            f'<div class="breadcrumbs"><a id="crumb-home" href="/">Home</a> / '
            f'<a id="crumb-category" href="/category/{product["category"]}">{escape(category_title)}</a></div>'
            f'<h1 id="product-name">{escape(product["name"])}</h1>'
            f'<p>Price: <span class="price" id="product-price">{money(product["price"])}</span></p>'
            f'<p>Rating: {product["rating"]} out of 5 stars ({product["reviews"]} reviews). Availability: {escape(product["stock"])}.</p>'
            f'<p>{escape(product["description"])}</p>'
            f'<h2>Specifications</h2><table id="specs">{specs}</table>'
            '<form id="add-to-cart-form" action="/cart/add" method="post">'
            f'<input type="hidden" name="sku" value="{sku}">'
            f'<label for="quantity">Quantity</label> <select id="quantity" name="quantity">{quantities}</select> '
            f'<button id="add-to-cart" type="submit" aria-label="Add {escape(product["name"])} to cart">Add to cart</button></form>',
        )

    def route_cart_add(self) -> None:
        sku = self.form.get("sku", "")
        quantity = self.form.get("quantity", "1")
        cart = self.cart()
        if sku in _products() and quantity.isdigit():
            cart[sku] = min(cart.get(sku, 0) + int(quantity), 99)
        self.redirect(f"/cart?added={quote(sku)}", self.cart_cookie(cart))

    def route_cart_remove(self) -> None:
        cart = self.cart()
        cart.pop(self.form.get("sku", ""), None)
        self.redirect("/cart", self.cart_cookie(cart))

    def route_cart(self) -> None:
        cart = self.cart()
        products = _products()
        notice = ""
        if (added := self.query.get("added")) in products:
            notice = f'<p class="notice" id="added-notice">Added {escape(products[added]["name"])} to your cart.</p>'
        if not cart:
            self.html("Your cart - Northwind Market", f'<h1>Your cart</h1>{notice}<p id="cart-empty">Your cart is empty.</p>')
            return
        rows = ""
        total = 0.0
        for sku, qty in cart.items():
            product = products[sku]
            line_total = product["price"] * qty
            total += line_total
            rows += (
                f'<tr id="cart-row-{sku}"><td><a id="cart-item-{sku}" href="/product/{sku}">{escape(product["name"])}</a></td>'
                f'<td>{qty}</td><td>{money(product["price"])}</td><td>{money(line_total)}</td>'
                f'<td><form action="/cart/remove" method="post"><input type="hidden" name="sku" value="{sku}">'
                f'<button id="remove-{sku}" type="submit" aria-label="Remove {escape(product["name"])}">Remove</button></form></td></tr>'
            )
        self.html(
            "Your cart - Northwind Market",
            f'<h1>Your cart</h1>{notice}<table id="cart"><tr><th>Product</th><th>Quantity</th><th>Price</th><th>Subtotal</th><th></th></tr>{rows}</table>'
            f'<p id="cart-total">Cart total: <span class="price">{money(total)}</span></p>'
            '<p><a id="checkout" href="/checkout">Proceed to checkout</a></p>',
        )

    def route_checkout(self) -> None:
        self.html("Checkout - Northwind Market", "<h1>Checkout</h1><p>Checkout is closed in this demo store; nothing was charged.</p>")


# ----------------------------------------------------------------------------------------------- wiki


def _wiki_pages() -> dict[str, dict[str, Any]]:
    """Every wiki page keyed by its path ('getting-started/installation/ports'), each with its parent path."""
    pages: dict[str, dict[str, Any]] = {}

    def visit(node: dict[str, Any], parent: str) -> None:
        path = f'{parent}/{node["slug"]}' if parent else node["slug"]
        pages[path] = {**node, "path": path, "parent": parent}
        for child in node.get("children", []):
            visit(child, path)

    for section in load_data("wiki.json")["sections"]:
        visit(section, "")
    return pages


def _wiki_text(page: dict[str, Any]) -> str:
    rows = " ".join(" ".join(row) for row in page.get("table", []))
    return f'{page["title"]} {" ".join(page["body"])} {rows}'.replace("`", "")


def wiki_search(query: str) -> list[dict[str, Any]]:
    words = query.lower().split()
    if not words:
        return []
    return [page for page in _wiki_pages().values() if all(word in _wiki_text(page).lower() for word in words)]


def _dom_id(path: str) -> str:
    return path.replace("/", "--")


class WikiHandler(SiteHandler):
    NAME = "wiki"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/guide/?", "route_guide"),
        ("GET", r"/guide/([a-z0-9/-]+?)/?", "route_page"),
        ("GET", r"/search", "route_search"),
    ]

    def header(self) -> str:
        return (
            '<header class="site">'
            '<a id="home-link" class="brand" href="/">Harbor DB Docs</a>'
            '<a id="guide-link" href="/guide/">Guide</a>'
            '<form id="search-form" action="/search" method="get" role="search">'
            f'<input id="search-input" name="q" type="text" placeholder="Search the docs" aria-label="Search the docs" value="{escape(self.query.get("q", ""))}">'
            '<button id="search-button" type="submit">Search</button></form></header>'
        )

    def footer(self) -> str:
        return '<footer class="site">Harbor DB documentation, version 3.2. Licensed CC BY 4.0.</footer>'

    def sidebar(self, current: str) -> str:
        """Top-level sections always; below them, only the branch that leads to the current page."""
        pages = _wiki_pages()

        def branch(node: dict[str, Any], parent: str) -> str:
            path = f'{parent}/{node["slug"]}' if parent else node["slug"]
            css = ' class="current"' if path == current else ""
            item = f'<li><a id="side-{_dom_id(path)}" href="/guide/{path}/"{css}>{escape(node["title"])}</a>'
            expanded = current == path or current.startswith(path + "/")
            if expanded and node.get("children"):
                item += "<ul>" + "".join(branch(child, path) for child in node["children"]) + "</ul>"
            return item + "</li>"

        sections = "".join(branch(pages[s["slug"]], "") for s in load_data("wiki.json")["sections"])
        return f'<aside class="sidebar" aria-label="Documentation navigation"><ul>{sections}</ul></aside>'

    def route_home(self) -> None:
        self.html(
            "Harbor DB Docs",
            "<h1>Harbor DB documentation</h1><p>Harbor DB is a distributed SQL database for small operations teams.</p>"
            '<p><a id="open-guide" href="/guide/">Read the guide</a> or use the search box above.</p>',
        )

    def route_guide(self) -> None:
        sections = "".join(
            f'<li><a id="nav-{s["slug"]}" href="/guide/{s["slug"]}/">{escape(s["title"])}</a> - {_inline_code(s["body"][0])}</li>'
            for s in load_data("wiki.json")["sections"]
        )
        self.html(
            "Guide - Harbor DB Docs",
            f'<div class="layout">{self.sidebar("")}<article><h1>Guide</h1><ul id="sections">{sections}</ul></article></div>',
        )

    def route_page(self, path: str) -> None:
        path = path.strip("/")
        page = _wiki_pages().get(path)
        if page is None:
            self.not_found()
            return
        pages = _wiki_pages()
        crumbs: list[str] = []
        walk = page["parent"]
        while walk:
            crumbs.insert(0, f'<a href="/guide/{walk}/">{escape(pages[walk]["title"])}</a>')
            walk = pages[walk]["parent"]
        crumbs.insert(0, '<a href="/guide/">Guide</a>')
        body = "".join(f"<p>{_inline_code(paragraph)}</p>" for paragraph in page["body"])
        if table := page.get("table"):
            head = "".join(f"<th>{escape(cell)}</th>" for cell in table[0])
            rows = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table[1:])
            body += f'<table id="facts"><tr>{head}</tr>{rows}</table>'
        if children := page.get("children"):
            links = "".join(
                f'<li><a id="child-{child["slug"]}" href="/guide/{path}/{child["slug"]}/">{escape(child["title"])}</a></li>'
                for child in children
            )
            body += f'<h2>In this section</h2><ul id="children">{links}</ul>'
        self.html(
            f'{page["title"]} - Harbor DB Docs',
            f'<div class="layout">{self.sidebar(path)}<article>'
            f'<nav class="breadcrumbs" aria-label="Breadcrumbs">{" / ".join(crumbs)}</nav>'
            f'<h1 id="page-title">{escape(page["title"])}</h1>{body}</article></div>',
        )

    def route_search(self) -> None:
        query = self.query.get("q", "").strip()
        results = wiki_search(query)
        items = "".join(
            f'<li><a id="result-{_dom_id(p["path"])}" href="/guide/{p["path"]}/">{escape(p["title"])}</a> - {_inline_code(p["body"][0])}</li>'
            for p in results
        )
        listing = f'<ul class="results" id="results">{items}</ul>' if results else '<p id="no-results">No pages match your search.</p>'
        self.html(
            f"Search: {query} - Harbor DB Docs",
            f'<h1>Search results</h1><p id="result-summary">{len(results)} pages match "{escape(query)}".</p>{listing}',
        )


# -------------------------------------------------------------------------------------------- booking


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
            f'<label for="room">Room type</label><select id="room" name="room">{_options(rooms, values.get("room", ""))}</select>'
            f'<label for="guests">Guests</label><select id="guests" name="guests">{_options(guests, values.get("guests", "1"))}</select>'
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


# ------------------------------------------------------------------------------------------- longpage

_LONGPAGE_NOTES = [
    "The keepers kept a daily log of passing ships, weather and the state of the lamp.",
    "A fog signal was added after a run of groundings in the winter storms.",
    "The lantern room still holds its original Fresnel lens, now lit by an electric lamp.",
    "Seabirds nest on the ledges below the tower from April to July.",
    "The keepers' cottages were sold and are now holiday lets.",
    "At low tide a causeway of shingle joins the rock to the mainland.",
]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class LongPageHandler(SiteHandler):
    NAME = "longpage"
    ROUTES = [("GET", r"/", "route_home")]

    def route_home(self) -> None:
        data = load_data("longpage.json")
        toc = "".join(
            f'<li><a id="toc-{_slug(h["name"])}" href="#{_slug(h["name"])}">{escape(h["name"])}</a></li>' for h in data["lighthouses"]
        )
        sections = ""
        for number, light in enumerate(data["lighthouses"], start=1):
            name = escape(light["name"])
            sections += (
                f'<section class="entry" id="{_slug(light["name"])}"><h2>{number}. {name}</h2>'
                f'<p>The {name} tower, first lit in {light["built"]}, stands {light["height_m"]} metres tall; '
                f'{light["steps"]} steps lead up to the lantern room.</p>'
                f'<p>{name} was automated in {light["automated"]}, when its last resident keeper left.</p>'
                f"<p>{escape(_LONGPAGE_NOTES[number % len(_LONGPAGE_NOTES)])} "
                f"{escape(_LONGPAGE_NOTES[(number * 5 + 2) % len(_LONGPAGE_NOTES)])}</p></section>"
            )
        centre = data["visitor_centre"]
        footer = (
            f'<footer class="site" id="visitor-centre"><h2>Visitor centre</h2><p>{escape(centre["name"])}, {escape(centre["address"])}.</p>'
            f'<p>Phone: {escape(centre["phone"])}. Opening hours: {escape(centre["hours"])}.</p>'
            '<p><a id="back-to-top" href="#top">Back to top</a></p></footer>'
        )
        page = render_page(
            data["title"],
            f'<h1 id="top">{escape(data["title"])}</h1><p>{escape(data["intro"])}</p>'
            f'<nav aria-label="Contents"><h2>Contents</h2><ol id="contents">{toc}</ol></nav>{sections}',
            footer=footer,
        )
        self.send_body(200, page, "text/html; charset=utf-8")


# --------------------------------------------------------------------------------------------- studio
# Three pages that browser-use's index-based actions alone cannot do: a code that only the clipboard carries, a
# target drawn on a canvas (no element to index: it takes a click by coordinates, found in the screenshot) and a
# list reordered by dragging (pointer events, no other way).

INVITE_CODE = "ORCA-5531-KITE"
INVITE_DESK = "B-14"
TARGET = {"x": 430, "y": 170, "r": 16, "colour": "#e0201b"}   # on a 600x260 canvas
TARGET_PRIZE = "LUMEN-42"
BOARD_ITEMS = [("tests", "Run the test suite"), ("backup", "Back up the database"), ("deploy", "Deploy the release")]
BOARD_WANTED = "backup,tests,deploy"
BOARD_CONFIRMATION = "CHK-7719"

_INVITE_SCRIPT = """
const code = atob("%s");
const status = document.getElementById("copy-status");
document.getElementById("copy-code").addEventListener("click", async () => {
  try { await navigator.clipboard.writeText(code); status.textContent = "Invite code copied to the clipboard."; }
  catch (e) { status.textContent = "Copy failed: " + e.name; }
});
document.getElementById("paste-code").addEventListener("click", async () => {
  try { document.getElementById("invite-code").value = await navigator.clipboard.readText();
        status.textContent = "Pasted from the clipboard."; }
  catch (e) { status.textContent = "Paste failed: " + e.name; }
});
"""

_TARGET_SCRIPT = """
const board = document.getElementById("board");
const g = board.getContext("2d");
g.fillStyle = "#f2f2ee"; g.fillRect(0, 0, board.width, board.height);
g.strokeStyle = "#c9c9c2";
for (let x = 0; x < board.width; x += 40) { g.beginPath(); g.moveTo(x, 0); g.lineTo(x, board.height); g.stroke(); }
for (let y = 0; y < board.height; y += 40) { g.beginPath(); g.moveTo(0, y); g.lineTo(board.width, y); g.stroke(); }
g.fillStyle = "%(colour)s"; g.beginPath(); g.arc(%(x)d, %(y)d, %(r)d, 0, 2 * Math.PI); g.fill();
// on the window, not the canvas: the canvas carries no listener, so nothing on the page has an index for it
window.addEventListener("click", (e) => {
  const box = board.getBoundingClientRect();
  const x = e.clientX - box.left, y = e.clientY - box.top;
  if (x < 0 || y < 0 || x > box.width || y > box.height) return;
  if (Math.hypot(x - %(x)d, y - %(y)d) <= %(r)d + 4) { location.href = "/target/hit?at=" + Math.round(x) + "," + Math.round(y); }
  else { document.getElementById("result").textContent = "Missed at " + Math.round(x) + ", " + Math.round(y) + "."; }
});
"""

_BOARD_SCRIPT = """
const list = document.getElementById("steps");
const order = document.getElementById("order");
const shown = document.getElementById("current-order");
let dragging = null;
function refresh() {
  const items = [...list.querySelectorAll("li")];
  order.value = items.map((li) => li.dataset.key).join(",");
  shown.textContent = "Current order: " + items.map((li) => li.textContent).join(", ") + ".";
}
list.addEventListener("pointerdown", (e) => { dragging = e.target.closest("li"); e.preventDefault(); });
document.addEventListener("pointerup", (e) => {
  const from = dragging; dragging = null;
  if (!from) return;
  const over = document.elementFromPoint(e.clientX, e.clientY);
  const to = over && over.closest("#steps li");
  if (!to || to === from) return;
  const items = [...list.children];
  if (items.indexOf(from) > items.indexOf(to)) list.insertBefore(from, to); else to.after(from);
  refresh();
});
refresh();
"""


class StudioHandler(SiteHandler):
    NAME = "studio"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/invite", "route_invite"),
        ("GET", r"/join", "route_join"),
        ("GET", r"/target", "route_target"),
        ("GET", r"/target/hit", "route_target_hit"),
        ("GET", r"/board", "route_board"),
        ("GET", r"/board/save", "route_board_save"),
    ]

    def header(self) -> str:
        return (
            '<header class="site"><a id="home-link" class="brand" href="/">Studio</a></header>'
            '<nav class="main" aria-label="Main"><a id="nav-invite" href="/invite">Team invite</a>'
            '<a id="nav-target" href="/target">Target practice</a><a id="nav-board" href="/board">Release checklist</a></nav>'
        )

    def route_home(self) -> None:
        self.html("Studio", "<h1>Studio</h1><p>Team tools: invites, target practice and the release checklist.</p>")

    def route_invite(self) -> None:
        script = _INVITE_SCRIPT % base64.b64encode(INVITE_CODE.encode()).decode()
        self.html(
            "Team invite - Studio",
            "<h1>Team invite</h1><p>Copy the team's invite code and paste it into the box to join the team. "
            "For safety the code is never shown on screen.</p>"
            '<p><button id="copy-code" type="button">Copy invite code</button> <span id="copy-status" role="status"></span></p>'
            '<form id="join-form" action="/join" method="get"><label for="invite-code">Invite code</label> '
            '<input id="invite-code" name="code" type="text" placeholder="Paste the invite code" autocomplete="off"> '
            '<button id="paste-code" type="button">Paste</button> <button id="join-button" type="submit">Join the team</button></form>'
            f"<script>{script}</script>",
        )

    def route_join(self) -> None:
        code = self.query.get("code", "").strip()
        if code != INVITE_CODE:
            self.html("Team invite - Studio", '<h1>Team invite</h1><p class="error" id="join-error" role="alert">'
                      'That invite code is not valid. Copy it again and paste it.</p><p><a id="back" href="/invite">Back</a></p>', 400)
            return
        self.html("Welcome - Studio", f'<h1>Welcome to the team</h1><p id="welcome">You joined the team. Your desk is {INVITE_DESK}.</p>')

    def route_target(self) -> None:
        self.html(
            "Target practice - Studio",
            "<h1>Target practice</h1><p>Click the red dot on the board to reveal the prize code.</p>"
            '<canvas id="board" width="600" height="260"></canvas><p id="result" role="status"></p>'
            f"<script>{_TARGET_SCRIPT % TARGET}</script>",
        )

    def route_target_hit(self) -> None:
        self.html("Prize - Studio", f'<h1>Hit!</h1><p id="prize">You hit the dot. The prize code is {TARGET_PRIZE}.</p>')

    def route_board(self) -> None:
        items = "".join(f'<li role="option" id="item-{key}" data-key="{key}">{escape(text)}</li>' for key, text in BOARD_ITEMS)
        self.html(
            "Release checklist - Studio",
            "<h1>Release checklist</h1><p>Drag the items into the order they must be done in, then save.</p>"
            f'<ol id="steps" role="listbox" aria-label="Checklist order" style="touch-action:none;user-select:none">{items}</ol>'
            '<p id="current-order"></p><form id="board-form" action="/board/save" method="get">'
            f'<input type="hidden" id="order" name="order" value="{",".join(k for k, _ in BOARD_ITEMS)}">'
            '<button id="save-order" type="submit">Save order</button></form>'
            f"<script>{_BOARD_SCRIPT}</script>",
        )

    def route_board_save(self) -> None:
        if self.query.get("order", "") != BOARD_WANTED:
            self.html("Release checklist - Studio", '<h1>Release checklist</h1><p class="error" id="save-error" role="alert">'
                      'Not saved: the database must be backed up before anything else.</p><p><a id="back" href="/board">Back</a></p>', 400)
            return
        self.html("Saved - Studio", f'<h1>Order saved</h1><p id="saved">The checklist order is saved. Confirmation number {BOARD_CONFIRMATION}.</p>')


SITE_HANDLERS: dict[str, type[SiteHandler]] = {
    "shop": ShopHandler,
    "wiki": WikiHandler,
    "booking": BookingHandler,
    "longpage": LongPageHandler,
    "studio": StudioHandler,
}
