# frozen_string_literal: true

module Up
  VERSION = "0.2.0"
end
