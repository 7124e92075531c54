# frozen_string_literal: true

# opal/securerandom.rb against MRI's securerandom: the length, encoding and alphabet of
# each form, many calls in a row (across refills of the pool), a call larger than the pool,
# and that no two draws repeat.
require "securerandom"

p SecureRandom.random_bytes(16).then { |s| [s.bytesize, s.encoding] }
p SecureRandom.bytes(5).then { |s| [s.bytesize, s.encoding] }
p SecureRandom.hex(32).then { |s| [s.size, s.match?(/\A[0-9a-f]+\z/)] }
p SecureRandom.hex.size, SecureRandom.random_bytes.bytesize
p SecureRandom.base64(32).then { |s| [s.size, s.match?(%r{\A[A-Za-z0-9+/]+=*\z})] }
p SecureRandom.urlsafe_base64(32).then { |s| [s.size, s.match?(/\A[\w-]+\z/)] }
p SecureRandom.urlsafe_base64(32, true).then { |s| [s.size, s.end_with?("=")] }
p SecureRandom.urlsafe_base64(32, padding: false).size
p SecureRandom.uuid.match?(/\A[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\z/)
p SecureRandom.random_bytes(0), SecureRandom.random_bytes(10_000).bytesize
draws = Array.new(1000) { SecureRandom.hex(12) }
p draws.uniq.size, draws.all? { |d| d.size == 24 }
p (1..1000).flat_map { SecureRandom.random_bytes(64).bytes }.uniq.size
p SecureRandom.random_number(10).between?(0, 9), SecureRandom.random_number.between?(0, 1)
p SecureRandom.alphanumeric(20).match?(/\A[A-Za-z0-9]{20}\z/)
