"""The shop (Northwind Market): search with filters and sorting, product pages, and a cart kept in a cookie."""

from __future__ import annotations

from html import escape
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote

from om2w_tui.offline.sites.common import SiteHandler, load_data, money, options

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
            f'<label for="category">Category</label> <select id="category" name="category">{options(categories, category)}</select> '
            f'<label for="max-price">Price</label> <select id="max-price" name="max_price">{options(PRICE_LIMITS, max_price)}</select> '
            f'<label for="sort">Sort by</label> <select id="sort" name="sort">{options(SORTS, sort)}</select> '
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
        quantities = options([(str(n), str(n)) for n in range(1, 6)], "1")
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
