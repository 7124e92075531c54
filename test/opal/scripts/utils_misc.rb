# frozen_string_literal: true

# Rack::Utils beyond queries: cookies, ranges, statuses, paths, media types.
require "rack"
require "rack/utils"
require "rack/media_type"

U = Rack::Utils

p U.parse_cookies_header("a=1; b=2; c=x%20y; a=3")
p U.parse_cookies_header("")
p U.set_cookie_header("sid", value: "abc def", path: "/", domain: "example.org", max_age: 60,
                               secure: true, httponly: true, same_site: :lax)
p U.set_cookie_header("k", "v")
p U.set_cookie_header("k", value: "v", expires: Time.at(0).utc)
p U.delete_set_cookie_header("sid", path: "/")
p U.byte_ranges({ "HTTP_RANGE" => "bytes=0-9,20-,-5" }, 100)
p U.get_byte_ranges("bytes=5-1", 10)
p U.status_code(:not_found), U.status_code(:unprocessable_content), U.status_code(201)
p U::HTTP_STATUS_CODES[404], U::HTTP_STATUS_CODES[418]
p U.clean_path_info("/a/./b/../c//d")
p U.best_q_match("text/html;q=0.5, application/json", ["text/html", "application/json"])
# Opal has one Number type (1.0 prints as 1), so qualities are formatted.
p U.q_values("gzip;q=1.0, identity; q=0.5, *;q=0").map { |v, q| [v, format("%.2f", q)] }
p U.select_best_encoding(%w[gzip identity], [["gzip", 1.0], ["identity", 0.5]])
p U.forwarded_values("for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8::1]:80\"").transform_keys(&:to_s)
p Rack::MediaType.type("text/html; charset=UTF-8"), Rack::MediaType.params("text/plain; charset=utf-8; a=\"b\"")
p U.valid_path?("/a/b"), U.valid_path?("/a\0b")
p U.secure_compare("abc", "abc"), U.secure_compare("abc", "abd")
