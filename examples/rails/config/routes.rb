# frozen_string_literal: true

Rails.application.routes.draw do
  resources :posts
  root "posts#index"
  # Action Cable's own browser client, served from its gem at a fixed path: the page imports it
  # as an ES module, which Propshaft's fingerprinted names do not reach without an import map.
  get "/actioncable.esm.js", to: Rack::Files.new(ActionCable::Engine.root.join("app/assets/javascripts").to_s)
end
