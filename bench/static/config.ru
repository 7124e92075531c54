# frozen_string_literal: true

# bench/run's static tables (static_1k, static_100k, static_1m, static_range, static_304): the
# files are in public/ beside this file, written by bench/run before the first table
# (Bench::AppServices). Every server of those tables answers them from the disk without calling
# this app, which answers what a miss gets: a server that called it would fail the table's first
# check.
run ->(_env) { [404, { "content-type" => "text/plain" }, ["not a file"]] }
