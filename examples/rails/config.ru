# frozen_string_literal: true

# `bundle exec rackup -s up` (or `bundle exec rails s -u up`) from examples/rails.
require_relative "config/environment"

run Rails.application
Rails.application.load_server
