# frozen_string_literal: true

module ApplicationCable
  # The base of the app's channels.
  class Channel < ActionCable::Channel::Base
  end
end
