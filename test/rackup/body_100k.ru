# frozen_string_literal: true

# A 100 KB response body, built once when the app loads, so that the measure is how fast the
# server writes a large body, not how fast Ruby builds one.
body = ("0123456789abcdef" * 6400).freeze # 16 * 6400 = 102_400 bytes

run ->(_env) { [200, { "content-type" => "text/plain" }, [body]] }
