# frozen_string_literal: true

Rails.application.routes.draw do
  resources :posts
  root "posts#index"
  # Action Cable's own browser client, served from its gem (this app has no asset pipeline).
  get "/actioncable.esm.js", to: Rack::Files.new(ActionCable::Engine.root.join("app/assets/javascripts").to_s)
end
