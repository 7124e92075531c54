# frozen_string_literal: true

module Up
  VERSION = "0.1.0"
end
