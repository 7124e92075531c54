# frozen_string_literal: true

module Bench
  # A sum over the measured runs of one server and what it is counted against: CPU seconds
  # against requests, Redis GETs against successful responses (Runner::Row keeps one each).
  # Runs where a reading failed are left out of both sides.
  Tally = Struct.new(:amount, :count) do
    def initialize(amount = 0, count = 0)
      super
    end

    def add(amount, count)
      self.amount += amount
      self.count += count
    end

    # amount per count, or nil while nothing was counted.
    def per
      count.positive? ? amount.fdiv(count) : nil
    end
  end
end
