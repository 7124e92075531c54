# frozen_string_literal: true

module ApplicationCable
  # One per WebSocket at /cable: anyone may watch the posts, so nobody is identified.
  class Connection < ActionCable::Connection::Base
  end
end
