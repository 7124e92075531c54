# frozen_string_literal: true

require_relative "boot"

require "rails"
require "active_model/railtie"
require "active_record/railtie"
require "action_controller/railtie"
require "action_view/railtie"
require "action_cable/engine"

Bundler.require(*Rails.groups)

module PostsApp
  # One scaffold (posts: title, body) on SQLite, a stylesheet and a script in app/assets
  # (Propshaft), and an Action Cable channel (PostsChannel, at /cable) that shows new posts on
  # the index page.
  class Application < Rails::Application
    config.load_defaults 7.2
    config.autoload_lib(ignore: %w[tasks])
  end
end
